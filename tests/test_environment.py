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
