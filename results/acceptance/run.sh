#!/bin/bash
# usage: results/acceptance/run.sh SWEEP prog.py [configs] [timeout]
#   e.g. run.sh accept5a b01_cross_dim_recurrences.py torch:default,jax:default
# runs against the repository's tempo/ and appends to /tmp/SWEEP/results.jsonl
# (grid: python results/acceptance/SWEEP/grid.py).
A=$(cd "$(dirname "$0")" && pwd)
S=$1; P=$2; shift 2
case $P in /*) ;; *) P=$A/$S/$P;; esac
mkdir -p /tmp/$S
cd "$A/../.."
PY=.venv/bin/python; [ -x "$PY" ] || PY=/work/main/.venv/bin/python
PYTHONPATH="$PWD:$A:$A/$S" $PY "$A/$S/harness.py" "$P" "$@" \
  2>>/tmp/$S/stderr.log | tee -a /tmp/$S/results.jsonl
