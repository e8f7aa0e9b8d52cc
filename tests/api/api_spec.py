"""API.md as data: the import paths of §0 and the documented signatures (§1-§6), written
out by hand from the document so `test_api_contract.py` can check the code against them.

A signature is the parameter list exactly as API.md prints it (parsed with `ast`); `float32`
stands for `dtypes.float32`. Entries of the RL and LLM libraries (issues 11 and 12) carry
the issue that adds them."""

from __future__ import annotations

# ---------------------------------------------------------------- §0 module map
PATHS: list[tuple[str, str]] = [
    ("tempo", "TempoError"),
    *[("tempo.api", n) for n in ("RecurrentTensor", "TempoContext", "min", "max")],
    *[("tempo.api.recurrent_tensor", n) for n in (
        "RecurrentTensor", "lift", "sink_udf", "MaybeRecurrentTensor", "dtypes")],
    ("tempo.api.tempo_context_manager", "TempoContext"),
    ("tempo.api.tempo_context_manager", "get_active_ctx_manager"),
    *[("tempo.core.index_expr", n) for n in (
        "Symbol", "ConstInt", "ConstBool", "ConstFloat", "Add", "Sub", "Mul", "FloorDivision",
        "Modulos", "Pow", "TrueDivision", "Neg", "Ceil", "Floor", "Min", "Max", "Piecewise",
        "Equal", "LessThan", "LessThanOrEqual", "GreaterThan", "GreaterThanOrEqual", "And",
        "Or", "Not", "Slice", "IndexSequence", "IndexExpr", "IndexAtom", "IndexValue",
        "IntIndexValue", "BooleanIndexValue", "min", "max", "slice_", "piecewise",
        "lift_to_ie", "lift_to_int_ie", "lift_to_bool_ie", "lift_to_ie_seq", "lift_to_ie_atom",
        "evaluate", "evaluate_int", "struct_eq", "logical_eq", "symbols", "bound_symbols")],
    ("tempo.core.configs", "ExecutionConfig"), ("tempo.core.configs", "get_default_path"),
    ("tempo.core.dtype", "DataType"), ("tempo.core.dtype", "dtypes"),
    ("tempo.core.utils", "make_symbols"),
    ("tempo.core.domain", "Domain"), ("tempo.core.domain", "DomainLike"),
    ("tempo.core.shape", "Shape"), ("tempo.core.shape", "StaticShape"),
    ("tempo.core.shape", "ShapeLike"),
    ("tempo.core.device", "device"),
    ("tempo.core.dl_backend", "DLBackend"),
    ("tempo.runtime.executor.executor", "Executor"),
    *[("tempo.api.nn", n) for n in (
        "Module", "Sequential", "Linear", "Embedding", "RMSNorm", "MultiHeadAttention",
        "Conv1d", "Conv2d", "Conv3d", "ConvTransposed1d", "ConvTransposed2d",
        "ConvTransposed3d", "ActivationFunction", "Relu", "Sigmoid", "Tanh", "Swish",
        "Softmax", "Elu", "LeakyRelu", "Mish", "Softplus")],
    ("tempo.api.nn.linear", "Linear"), ("tempo.api.nn.rms_norm", "RMSNorm"),
    ("tempo.api.nn.multihead_attention", "MultiHeadAttention"),
    ("tempo.api.nn.rope", "RotaryPositionalEmbeddings"),
    ("tempo.api.nn.rope", "RopeScalingParams"), ("tempo.api.nn.swiglu", "SwiGLU"),
    ("tempo.api.nn.rnn", "GRUCell"), ("tempo.api.nn.rnn", "LSTMCell"),
    ("tempo.api.nn.flatten", "Flatten"), ("tempo.api.nn.turnkey", "FullyConnected"),
    ("tempo.api.nn.turnkey", "FullyConnectedActorCritic"), ("tempo.api.nn.utils", "clip_norm"),
    ("tempo.api.nn.state_loader", "StateDictLoader"),
    *[("tempo.api.optim.optim", n) for n in ("Optimizer", "SGD", "Adam", "AdamW", "LAMB")],
    *[("tempo.api.distributions", n) for n in ("Categorical", "Normal", "Uniform")],
    ("tempo.api.rl.env.trivial_env", "TrivialEnv"),
    *[("tempo.api.rl", n) for n in (
        "gae", "n_step_returns", "bootstrapped_n_step_returns", "n_step_td_residual",
        "ObservationsRecurrentTensor", "ActionsRecurrentTensor", "ValueRecurrentTensor",
        "RewardsRecurrentTensor", "TerminationsRecurrentTensor", "TruncationsRecurrentTensor")],
    ("tempo.api.rl.env.env", "Env"),
    ("tempo.api.rl.env.env_registry.env_registry", "EnvRegistry"),
    ("tempo.api.rl.env.wrappers", "DoneToTermTruncAPIConverterWrapper"),
    ("tempo.api.rl.env.wrappers", "TempoEnvWrapper"),
    ("tempo.api.rl.networks.model_builder", "ModelBuilder"),
    ("tempo.api.rl.networks.model_builder", "DNNBuilder"),
    ("tempo.api.rl.replay_buffer.replay_buffer", "ReplayBuffer"),
    ("tempo.api.data", "DataLoader"),
    ("tempo.utils.torch_profiler", "TorchProfiler"), ("tempo.utils.jax_profiler", "JaxProfiler"),
    ("tempo.utils.cprofiler", "Profiler"),
    ("tempo.utils.make_sink", "make_sink"), ("tempo.utils.make_sink", "make_step_by_step_sink"),
    *[("tempo.api.llm.models.llama", n) for n in (
        "Llama", "LlamaArgs", "TransformerBlock", "FeedForward")],
    ("tempo.api.llm.tokenizer.tokenizer", "RuntimeTokenizer"),
    ("tempo.api.llm.tokenizer.sp_tokenizer", "SPTokenizer"),
    ("tempo.api.llm.tokenizer.llama_tiktoken_tokenizer", "LlamaTiktokenTokenizer"),
]

ISSUE_PATHS: list[tuple[str, str, str]] = [
]

# ---------------------------------------------------------------- signatures
# (import path "module:attr.attr", API.md's parameter list). For RecurrentTensor ops the
# first parameter is the tensor the method is called on: compared by position only.
_NN = "tempo.api.nn"
SIGNATURES: list[tuple[str, str]] = [
    # §1
    ("tempo.api.tempo_context_manager:TempoContext",
     "execution_config=DEFAULT_EXEC_CFG, num_dims=None, dim_names=None"),
    ("tempo.core.utils:make_symbols", "names, start_idx=0"),
    ("tempo.api.tempo_context_manager:TempoContext.compile",
     "self, bounds=None, use_active_config=False"),
    ("tempo.api.tempo_context_manager:TempoContext.tag_region", "self, tag"),
    ("tempo.api.tempo_context_manager:TempoContext.when", "self, cond"),
    ("tempo.api.tempo_context_manager:TempoContext.domain_ctx", "self, domain"),
    ("tempo.api.tempo_context_manager:TempoContext.new_perm_var", "self, bound"),
    # §2
    ("tempo.core.index_expr:ConstInt", "const"), ("tempo.core.index_expr:ConstBool", "const"),
    ("tempo.core.index_expr:Symbol", "name, is_bound=False, idx=-1"),
    ("tempo.core.index_expr:Add", "left_operand, right_operand"),
    ("tempo.core.index_expr:Neg", "operand"),
    ("tempo.core.index_expr:Piecewise", "conds_and_branches"),
    ("tempo.core.index_expr:Slice", "start, stop"),
    ("tempo.core.index_expr:IndexSequence", "members"),
    ("tempo.core.index_expr:min", "a, b=None, *rest"),
    ("tempo.core.index_expr:max", "a, b=None, *rest"),
    ("tempo.core.index_expr:slice_", "start, stop"),
    ("tempo.core.index_expr:piecewise", "pairs"),
    # §3.3 construction
    *[(f"tempo.api.recurrent_tensor:{n}", s) for n, s in [
        ("placeholder", "shape=(), dtype=None, domain=None, requires_grad=None"),
        ("placeholder_like", "x, requires_grad=None"),
        ("const", "val, shape=None, dtype=None, domain=None, requires_grad=None"),
        ("const_like", "val, y, requires_grad=None"),
        ("ones", "shape=(), dtype=None, domain=None, requires_grad=None"),
        ("zeros", "shape=(), dtype=None, domain=None, requires_grad=None"),
        ("ones_like", "y, dtype=None, requires_grad=None"),
        ("zeros_like", "y, dtype=None, requires_grad=None"),
        ("arange", "stop, start=0, step=1, dtype=None, requires_grad=None"),
        ("lift", "x"), ("from_symbol", "s"), ("from_expr", "e"),
        ("random", "shape=(), dtype=None, domain=None, requires_grad=None"),
        ("rand", "shape=(), dtype=None, domain=None, requires_grad=None"),
        ("uniform", "shape=(), low=0.0, high=1.0, dtype=None, domain=None, requires_grad=None"),
        ("random_int", "low=0, high=10, shape=(), dtype=None, domain=None"),
        ("random_bool", "shape=(), domain=None"),
        ("normal", "shape=None, dtype=None, domain=None, mean=0.0, std=1.0, requires_grad=None"),
        ("randn", "shape, dtype, domain, requires_grad"),
        ("linear_init_uniform", "shape, dtype, domain, num_input_features=None"),
        ("kaiming_uniform", "shape, a=0.01"),
        ("kaiming_normal", "shape, dtype, a=0.01"),
        ("orthogonal_init", "shape, dtype, domain, gain=1.41421356237"),
        ("init_from_statedict", "flat_state_dict, key, shape=None, dtype=None, domain=None, "
                                "skip_cast_dev_and_bend=False"),
        ("init_from_existing_tensor", "t, shape, dtype, domain=None"),
        ("source_udf", "fun, shape, dtype, domain, requires_grad=False"),
        ("source_with_ts_udf", "fun, shape, dtype, domain, lazy_vectorized_version=None, "
                               "requires_grad=False"),
        ("external_init", "fn, shape, dtype, domain=None"),
        # §3.6
        ("sink_udf", "x, fun"), ("sink_with_ts_udf", "x, fun"),
        ("sink_many_udf", "xs, fun"), ("sink_many_with_ts_udf", "xs, fun"),
        ("map_udf", "x, fun, shape=None, dtype=None"),
        ("map_with_ts_udf", "x, fun, shape=None, dtype=None"),
        ("barrier", "name=None"),
    ]],
]

# §3.8: module functions, also RecurrentTensor methods (first parameter = the tensor).
OPS: list[tuple[str, str]] = [
    *[(n, "x, y") for n in (
        "add", "sub", "subtract", "mul", "multiply", "div", "divide", "floor_div",
        "floor_divide", "remainder", "mod", "maximum", "minimum", "less_than",
        "less_than_or_equal", "greater_than", "greater_than_or_equal", "equals", "not_equals",
        "logical_and", "logical_or", "is_like")],
    ("pow_", "base, exponent"), ("log_base", "base, antilogarithm"),
    *[(n, "x") for n in (
        "square", "squared", "reciprocal", "exp", "exp2", "exp10", "ln", "log", "loge", "log2",
        "log10", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "abs", "neg", "negate",
        "floor", "ceil", "ceiling", "round", "trunc", "truncate", "logical_not", "not_", "relu",
        "swish", "silu", "mish")],
    ("cast", "x, dtype"), ("clip", "x, lb=None, ub=None"), ("clamp", "x, lb=None, ub=None"),
    ("normalize", "x, mean, std, eps=1e-8"),
    ("elu", "x, alpha=1.0"), ("leakyrelu", "x, neg_slope=0.01"), ("softplus", "x, beta=1"),
    ("softmax", "x, dim=-1, stable=True"), ("cross_entropy", "pred, target, class_dim=-1"),
    ("logsumexp", "x, sum_dims=None, keepdim=False"),
    ("sum", "x, dims=None, keepdim=False"), ("mean", "x, dims=None, keepdim=False"),
    ("std", "x, dims=None, correction=1.0"),
    # §7.8: without dim, max/min/argmax/argmin reduce over all dims (default dim=None)
    ("max", "x, dim=None, keepdim=False"), ("min", "x, dim=None, keepdim=False"),
    ("argmax", "x, dim=None, keepdim=False"), ("argmin", "x, dim=None, keepdim=False"),
    ("cumsum", "x, dim=-1"), ("cumprod", "x, dim=-1, positive=False"),
    ("l_norm", "x, n=2, dims=None"), ("discounted_sum", "x, gamma, dim=0"),
    ("discounted_cum_sum", "x, gamma, dim=0, keep_symbolic_dim=True"),
    ("sort", "x, dim=-1, descending=False, stable=False"),
    ("matmul", "x, y"), ("dot", "x, y"),
    ("reshape", "x, shape"), ("flatten", "x, start_dim=0, end_dim=-1"),
    ("unflatten", "x, dim, sizes"), ("permute", "x, dims"), ("transpose", "x, dim0=1, dim1=0"),
    ("expand", "x, shape"), ("squeeze", "x, dims=None"), ("unsqueeze", "x, dim=0"),
    ("repeat", "x, num_repeats"), ("repeat_interleave", "x, num_repeats, dim"),
    ("flip", "x, dim"), ("split", "x, dim, num_splits"), ("chunk", "x, chunks, dim=0"),
    ("pad", "x, padding, mode='constant', value=None"),
    ("pad_dim", "x, padding, dim, mode='constant', value=None"),
    ("dilate", "x, dilations, n_dims=None"),
    *[(n, "x, dim, index") for n in ("index", "spatial_index", "index_select")],
    ("index_many", "x, indexes"), ("spatial_index_many", "x, indexes"),
    ("index_add", "x, dim, index, src, alpha=1.0"),
    ("spatial_index_add", "x, dim, index, src, alpha=1.0"),
    ("slice_dim", "x, dim, start, stop, step=None"), ("slice_many", "x, slices"),
    ("gather", "src, dim, index"), ("scatter_add", "sink, dim, index, src"),
    ("one_hot", "class_int, num_classes"),
    ("multinomial", "weights, num_samples=1, replacement=False, domain=None"),
    ("sample_top_p", "probs, p=0.9"), ("sample_likely", "probs, above=0.05"),
    ("ident", "x"), ("detach", "x"),
]

# Module-only (or static) functions of §3.8.
FUNCTIONS: list[tuple[str, str]] = [
    ("where", "condition, true_data, false_data"),
    ("cat", "xs, *more, dim=0"), ("stack", "xs, *more, dim=0"),
    ("scatter", "dim, index, src"),
    ("conv_general", "input, weight, n_dims, stride=1, padding=0, dilation=1, transposed=False, "
                     "output_padding=0, groups=1"),
    ("convolution", "input, weight, n_dims, stride=1, padding=0, dilation=1, transposed=False, "
                    "output_padding=0, groups=1"),
    *[(f"conv{n}d", "input, weight, stride=1, padding=0, dilation=1, transposed=False, "
                    "output_padding=0, groups=1") for n in (1, 2, 3)],
    ("broadcast_tensors", "*xs"), ("upcast_tensors", "*xs"), ("lift_all_to_rt", "*xs"),
]

_EXE = "tempo.runtime.executor.executor:Executor"
SIGNATURES += [
    # §3.7, §4.1
    ("tempo.api.recurrent_tensor:RecurrentTensor.backward", "self, grad=None"),
    (f"{_EXE}.execute", "self"), (f"{_EXE}.reset", "self"), (f"{_EXE}.shutdown", "self"),
    (f"{_EXE}.get_spatial_tensor_torch", "self, tensor_id, index=()"),
    (f"{_EXE}.get_spatial_tensor", "self, tensor_id, index=()"),
    ("tempo.runtime.executor.executor:PythonExecutor.tick", "self"),
    ("tempo.runtime.executor.executor:PythonExecutor.execute_until_barrier", "self, name"),
    ("tempo.runtime.executor.executor:PythonExecutor.get_compilation_time_breakdown", "self"),
    # §5
    ("tempo.core.dtype:DataType", "name, repr_bytes, priority, eps=None, minimum=None"),
    ("tempo.core.dtype:dtypes.from_", "x, none_dtype=None"),
    ("tempo.core.domain:Domain.from_", "d, none_is_empty=False"),
    ("tempo.core.domain:Domain.append_dim", "self, var, bound=None"),
    # §6.1 nn
    (f"{_NN}:Module", "domain=None, independent_domain=None"),
    (f"{_NN}:Module.param_from_init", "self, init_rt, regularize=True"),
    (f"{_NN}:Sequential", "*modules, domain=None, independent_domain=None"),
    (f"{_NN}:Linear", "in_features, out_features, bias=True, dtype=None, domain=None, "
                      "independent_domain=None, w_init_fun=None, b_init_fun=None"),
    (f"{_NN}:Embedding", "vocab_size, encoded_dim_size, dtype=None, domain=None, "
                         "independent_domain=None, w_init_fun=None"),
    (f"{_NN}:RMSNorm", "normalized_shape, eps=1e-7, elementwise_affine=True, dtype=None, "
                       "domain=None, independent_domain=None, w_init_fun=None"),
    (f"{_NN}.rope:RotaryPositionalEmbeddings", "dim, t, base=10000, domain=None, "
                                               "independent_domain=None, rope_scaling_params=None"),
    (f"{_NN}.rope:RopeScalingParams", "factor=32.0, high_freq_factor=4.0, low_freq_factor=1.0, "
                                      "original_max_position_embeddings=8192, rope_type='llama3'"),
    (f"{_NN}:MultiHeadAttention", "embed_dim, num_heads, seq_len, dropout=0.0, bias=False, "
                                  "apply_rope=False, dtype=None, domain=None, "
                                  "independent_domain=None, w_init_funs=None, b_init_funs=None, "
                                  "rope_theta=10000.0, rope_scaling_params=None, "
                                  "num_kv_heads=None"),
    (f"{_NN}:MultiHeadAttention.forward", "self, x, pattern=None"),
    (f"{_NN}:MultiHeadAttention.causal_forward", "self, x"),
    (f"{_NN}:MultiHeadAttention.windowed_forward", "self, x, window_size"),
    (f"{_NN}.swiglu:SwiGLU", "in_features, out_features, dtype=float32, domain=None, "
                             "independent_domain=None, bias=True, w_init_fun=None, "
                             "v_init_fun=None, b_init_fun=None, c_init_fun=None"),
    *[(f"{_NN}:{c}", f"in_channels, out_channels, kernel_size{k}, stride=1, padding=0, "
                     "dilation=1, groups=1, bias=True, dtype=None, domain=None, "
                     "independent_domain=None, w_init_fun=None, b_init_fun=None")
      for c, k in [("Conv1d", ""), ("Conv2d", "=3"), ("Conv3d", "=3"),
                   ("ConvTransposed1d", ""), ("ConvTransposed2d", "=3"),
                   ("ConvTransposed3d", "=3")]],
    (f"{_NN}:Softmax", "dim=-1, stable=True"), (f"{_NN}:Elu", "alpha=1.0"),
    (f"{_NN}:LeakyRelu", "negative_slope=0.01"), (f"{_NN}:Softplus", "beta=1"),
    (f"{_NN}.flatten:Flatten", "start_dim=0, end_dim=-1"),
    *[(f"{_NN}.rnn:{c}", "input_size, hidden_size, bias=True, dtype=float32, domain=None, "
                         "independent_domain=None") for c in ("GRUCell", "LSTMCell")],
    (f"{_NN}.turnkey:FullyConnected", "input_shape, hidden_sizes, output_shape, "
                                      "act_fun='leakyrelu'"),
    (f"{_NN}.utils:clip_norm", "grads, max_norm, norm_type=2.0, eps=1e-6"),
    (f"{_NN}.state_loader:StateDictLoader.from_torch_checkpoint",
     "path, exec_cfg, cast_to_dtype=None"),
    (f"{_NN}.state_loader:StateDictLoader.empty", ""),
    (f"{_NN}.state_loader:StateDictLoader.append", "self, part"),
    (f"{_NN}.state_loader:StateDictLoader.load_tensor", "self, suffix"),
    # §6.2 optim
    ("tempo.api.optim.optim:Optimizer", "params, buffers, lr, max_norm=None, norm_type=2.0, "
                                        "independent_domain=None"),
    ("tempo.api.optim.optim:SGD", "params, buffers, lr=0.001, momentum=0.0, weight_decay=0.0, "
                                  "nesterov=False, max_norm=None, norm_type=2.0, "
                                  "independent_domain=None"),
    ("tempo.api.optim.optim:Adam", "params, buffers, lr=0.001, b1=0.9, b2=0.999, eps=1e-8, "
                                   "max_norm=None, norm_type=2.0, independent_domain=None"),
    ("tempo.api.optim.optim:LAMB", "params, buffers, lr=0.001, b1=0.9, b2=0.999, eps=1e-6, "
                                   "wd=0.0, adam=False, max_norm=None, norm_type=2.0, "
                                   "independent_domain=None"),
    ("tempo.api.optim.optim:Optimizer.step", "self"),
    # §6.3 distributions
    ("tempo.api.distributions:Distribution", "event_shape=None"),
    ("tempo.api.distributions:Distribution.sample", "self, shape=None"),
    ("tempo.api.distributions:Distribution.log_prob", "self, x"),
    ("tempo.api.distributions:Categorical", "probs=None, logits=None, domain=None"),
    ("tempo.api.distributions:Normal", "mu, sigma, domain=None"),
    ("tempo.api.distributions:Uniform", "low, high, domain=None"),
    # §6.5 llm
    ("tempo.api.llm.models.llama:LlamaArgs",
     "dim=4096, multiple_of=256, n_heads=32, n_kv_heads=None, n_layers=32, norm_eps=1e-5, "
     "ffn_dim_multiplier=None, rope_theta=10000.0, use_scaled_rope=False, vocab_size=-1, "
     "tie_embeddings_and_output=True, rope_scaling_params=None"),
    ("tempo.api.llm.models.llama:Llama", "params, temporal_dim, domain=None, "
                                         "independent_domain=None, state_loader=None"),
    ("tempo.api.llm.models.llama:Llama.forward", "self, tokens, attention_pattern=None"),
    ("tempo.api.llm.models.llama:Llama.sample",
     "logits, temperature=0.6, top_p=0.9, greedy=False"),
    ("tempo.api.llm.models.llama:Llama.from_checkpoint",
     "checkpoint_dir, temporal_dim, n_words, dtype, exec_cfg, domain=None, "
     "independent_domain=None, enable_rope_scaling=True, force_rope_base=None"),
    ("tempo.api.llm.models.llama:Llama.get_args_from_checkpoint",
     "dir, n_words, enable_rope_scaling=True, force_rope_base=None"),
    ("tempo.api.llm.models.llama:TransformerBlock", "params, seq_len, layer_idx"),
    ("tempo.api.llm.models.llama:FeedForward",
     "dim, hidden_dim, multiple_of, ffn_dim_multiplier=None"),
    ("tempo.api.llm.tokenizer.tokenizer:RuntimeTokenizer.encode", "self, s, bos=False, eos=False"),
    ("tempo.api.llm.tokenizer.tokenizer:RuntimeTokenizer.left_pad_token_batch",
     "self, token_lists, max_prompt_len"),
    # §6.4 rl
    ("tempo.api.rl:n_step_returns", "r, t, T=None, n=5, gamma=0.98"),
    ("tempo.api.rl:bootstrapped_n_step_returns", "r, v, t, T=None, n=5, gamma=0.98"),
    ("tempo.api.rl:n_step_td_residual", "r, v, t, T=None, n=5, gamma=0.98"),
    ("tempo.api.rl:gae", "r, v, t, T=None, gamma=0.98, lambda_=0.95"),
    ("tempo.api.rl.env.env:Env.make_env",
     "name, num_envs=None, max_episode_steps=None, wrappers=None, **kwargs"),
    ("tempo.api.rl.env.env:Env.reset", "self, seed=None, domain=None"),
    ("tempo.api.rl.env.env:Env.step", "self, actions, domain=None"),
    ("tempo.api.rl.env.env_registry.env_registry:EnvRegistry.register_env_set",
     "name, builder"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder",
     "domain=None, independent_domain=None, w_init_fun=None"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder.with_ff_encoder",
     "self, obs_shape, encoded_latent_size, bias=True, activation_fun=None"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder.with_cnn_encoder", "self, convs"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder.with_ff_hidden",
     "self, hidden_sizes, bias=True, activation_fun=None"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder.with_discrete_pi_decoder",
     "self, num_actions"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder.with_continuous_pi_decoder",
     "self, action_shape, bias=False, squish=False"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder.with_qfun_decoder", "self, num_outputs"),
    ("tempo.api.rl.networks.model_builder:ModelBuilder.from_env",
     "hidden, domain, env, actor_critic=False"),
    ("tempo.api.rl.networks.network:Network.polyak_update",
     "self, target, tau, update_var=None, update_freq=1"),
    ("tempo.api.rl.networks.network:Network.copy_every", "self, num_steps=1, var=None"),
    ("tempo.api.rl.replay_buffer.replay_buffer:ReplayBuffer.make",
     "max_size, item_shapes, item_dtypes, storage_type='deque', **kwargs"),
    ("tempo.api.rl.replay_buffer.replay_buffer:ReplayBuffer.insert", "self, data, domain=None"),
    ("tempo.api.rl.replay_buffer.replay_buffer:ReplayBuffer.sample", "self, domain, token=None"),
    ("tempo.api.tempo_context_manager:TempoContext.tag_region", "self, tag"),
]

# Documented with "..." in API.md: only the named parameters and their defaults.
PARTIAL: list[tuple[str, str]] = [
    ("tempo.api.optim.optim:AdamW", "eps=1e-8, wd=0.01"),
    (f"{_NN}:ConvTransposed1d", "output_padding=0"),
    (f"{_NN}:ConvTransposed2d", "output_padding=0"),
    (f"{_NN}:ConvTransposed3d", "output_padding=0"),
]
