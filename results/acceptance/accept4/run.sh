#!/bin/bash
# usage: run.sh prog.py [configs] -> appends to /tmp/accept4/results.jsonl
cd /work/wt/accept4
PYTHONPATH=/work/wt/accept4 /work/main/.venv/bin/python /tmp/accept4/harness.py "$@" 2>>/tmp/accept4/stderr.log | tee -a /tmp/accept4/results.jsonl
