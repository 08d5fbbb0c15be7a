#!/usr/bin/env bash
# The training job on the lent GPU machine, run from the repository root after the two landing calls of
# shared/tools/stage-embedded-model (the GGUF at /root/stage, the gguf wheel carried in .whl). Usage:
#   bash ddtree/training/device_job.sh RUN <ddtree.training.train arguments but --out>
# trains into /root/work/RUN (data.npz, log.jsonl, ckpt*/ stay on the warm machine for the next call) and copies
# the console output and log.jsonl to $OUT/RUN.{log,jsonl}.
set -euo pipefail
run=$1
shift
source bench/h200_setup.sh
# the package h200_setup.sh installed, not the work tree (python -P), which has no ddtree.kernels
export PYTHONPATH=/tmp/site
mkdir -p /root/work
python3 -P -m ddtree.training.train --out "/root/work/$run" "$@" 2>&1 | tee "$OUT/$run.log"
cp "/root/work/$run/log.jsonl" "$OUT/$run.jsonl"
