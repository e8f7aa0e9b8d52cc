#!/bin/bash
# Compile CPU seconds of earlier sweeps' whole programs (torch default), through accept7's
# harness (it times every TempoContext.compile): results/acceptance/accept7/compile_times.sh
A=$(cd "$(dirname "$0")/.." && pwd)
cd "$A/../.."
PY=/work/main/.venv/bin/python
for p in accept6/c02_llama_ragged_prompts accept6/c03_replay_dqn accept6/c04_reinforce_pendulum_vec \
         accept6/c05_layers_in_time accept6/c07_dynamic_episode_reinforce accept6/c10_recurrent_policy_resets \
         accept6/c12_lstm_lm_training accept5b/b09_networks_builder accept5b/b22_llama_finetune \
         accept5b/b23_mha_training accept4/a10_a2c_cartpole_train accept4/a17_attention_gru \
         accept6b/c12_2d_attention_grad accept6b/c04_three_dims; do
  S=${p%%/*}
  PYTHONPATH="$PWD:$A:$A/$S" $PY "$A/accept7/harness.py" "$A/$p.py" torch:default 600 2>>/tmp/accept7/ct_stderr.log
done | tee -a /tmp/accept7/compile_times.jsonl
