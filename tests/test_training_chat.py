"""General-chat prompt material (ddtree/training/chat.py): sizes, kinds, uniqueness, shapes and determinism."""
import re
from collections import Counter

import pytest

from ddtree.training.chat import chat_prompts

KINDS = {"explain", "howto", "recipe", "summary", "advice", "compare", "list", "story", "math"}


@pytest.fixture(scope="module")
def prompts():
    return chat_prompts(0)


def test_deterministic_for_a_seed_and_different_for_another(prompts):
    assert chat_prompts(0) == prompts
    other = chat_prompts(1)
    assert other != prompts
    assert [p["prompt"] for p in other] != [p["prompt"] for p in prompts]


def test_total_and_every_kind_well_represented(prompts):
    assert 4500 <= len(prompts) <= 6000
    counts = Counter(p["kind"] for p in prompts)
    assert set(counts) == KINDS
    assert all(count >= 300 for count in counts.values()), counts


def test_prompts_are_unique(prompts):
    texts = [p["prompt"] for p in prompts]
    assert len(set(texts)) == len(texts)


def test_dict_shape_and_lengths(prompts):
    for p in prompts:
        assert set(p) == {"kind", "source", "prompt"}
        assert all(isinstance(v, str) and v.strip() for v in p.values()), p
        assert 0 < len(p["prompt"]) <= 1500, p
        assert p["source"].startswith(("template:", "generated:")), p


def test_summary_prompts_contain_a_passage(prompts):
    for p in prompts:
        if p["kind"] == "summary":
            assert len(p["prompt"]) > 150, p
            assert max(len(part) for part in p["prompt"].split("\n\n")) > 150, p


def test_math_prompts_contain_numbers(prompts):
    for p in prompts:
        if p["kind"] == "math":
            assert re.search(r"\d", p["prompt"]), p
            assert "generated:math" in p["source"]


def test_templates_and_subjects_vary_within_each_kind(prompts):
    """Sources read "<template> x <subject>[ + <suffix>]": at least 12 templates and 40 subjects per kind; math
    sources read "generated:math <problem> (seeded numbers) x <frame>": at least 15 problems and 12 frames."""
    for kind in KINDS:
        sources = [p["source"] for p in prompts if p["kind"] == kind]
        left = {s.split(" x ")[0] for s in sources}
        right = {s.split(" x ")[1].split(" + ")[0] for s in sources}
        if kind == "math":
            assert len({s.split()[1] for s in sources}) >= 15
            assert len(right) >= 12
        else:
            assert len(left) >= 12, (kind, len(left))
            assert len(right) >= 40, (kind, len(right))
