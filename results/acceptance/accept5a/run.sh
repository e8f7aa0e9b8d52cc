#!/bin/bash
# usage: run.sh prog.py [configs] -> appends to /tmp/accept5a/results.jsonl
D=$(cd "$(dirname "$0")" && pwd)
cd /work/wt/accept5a
P=$1; shift; case $P in /*) ;; *) P=$D/$P;; esac
PYTHONPATH=/work/wt/accept5a /work/main/.venv/bin/python $D/harness.py "$P" "$@" 2>>/tmp/accept5a/stderr.log | tee -a /tmp/accept5a/results.jsonl
