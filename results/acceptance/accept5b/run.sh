#!/bin/bash
# usage: run.sh prog.py [configs] [timeout] -> appends to /tmp/accept5b/results.jsonl
D=$(cd "$(dirname "$0")" && pwd)
cd /work/wt/accept5b
mkdir -p /tmp/accept5b
PYTHONPATH=/work/wt/accept5b:$D /work/main/.venv/bin/python $D/harness.py "$D/$1" "${@:2}" 2>>/tmp/accept5b/stderr.log | tee -a /tmp/accept5b/results.jsonl
