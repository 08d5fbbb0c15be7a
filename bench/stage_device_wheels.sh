#!/usr/bin/env bash
# Stage the wheels the lent GPU machine lacks for running the notebooks headless (nbclient + ipykernel + the widget
# and plot packages) into .whl/ (git-ignored), for its Python 3.12. The machine cannot download anything; pass
# `.whl` in the device call's carry and install with
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# Packages the device image already holds (numpy, packaging, psutil, pygments, attrs, jinja2, tqdm, ...) are dropped.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qxF /.whl/ .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
mkdir -p .whl
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_34_x86_64 -d .whl \
  nbclient nbformat ipykernel ipywidgets plotly graphviz anywidget gguf==0.19.0
# already on the device image (its package list in the device tool's KINDS.md)
for present in numpy packaging psutil pygments attrs jinja2 markupsafe tqdm typing_extensions pyyaml PyYAML requests \
    urllib3 idna certifi charset_normalizer narwhals six python_dateutil sentencepiece; do
  rm -f .whl/${present}-*.whl
done
ls .whl
du -sh .whl
