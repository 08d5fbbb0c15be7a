"""General-chat prompt material (ddtree/training/chat.py, data/chat_material.jsonl): sizes, kinds, uniqueness,
shapes and determinism; the committed prompts file's chat prompts drawn again as they were, with material appended
since; the material file's tables, and its malformed lines."""
import json
import re
from collections import Counter

import pytest

from ddtree.training import chat
from ddtree.training.chat import chat_prompts
from ddtree.training.prompts import PROMPTS_FILE

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
    assert 11000 <= len(prompts) <= 12000
    counts = Counter(p["kind"] for p in prompts)
    assert set(counts) == KINDS
    assert all(count >= 1000 for count in counts.values()), counts


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


def committed_chat_prompts() -> dict[str, str]:
    """{prompt: source} of the committed prompts file's general-chat prompts from this module (topics are
    prompts.py's)."""
    data = json.loads(PROMPTS_FILE.read_text())
    return {p["prompt"]: p["source"] for side in ("train", "heldout") for p in data[side]
            if p["group"] == "chat" and p["kind"] != "topic"}


def test_the_committed_file_holds_every_draw_as_drawn_now(prompts):
    """Every chat prompt of the committed file comes out again with the same source, and the file holds every prompt
    drawn now; each draw's subjects are the entries it added (none of an earlier draw's)."""
    assert {p["prompt"]: p["source"] for p in prompts} == committed_chat_prompts()
    assert all(len(getattr(chat, name)) == size for name, size in chat.DRAWS[-1].items())  # nothing left undrawn
    for k, (before, sizes) in enumerate(zip(chat.DRAWS, chat.DRAWS[1:]), 1):
        drawn = chat.draw(chat.random.Random(f"0:draw{k}"), before, sizes)
        assert len(drawn) > 5000
        for p in drawn:
            if p["kind"] == "math":
                problem = getattr(chat, p["source"].split()[1])
                assert chat.MATH_PROBLEMS.index(problem) >= before["MATH_PROBLEMS"], p["source"]
            else:
                subject = p["source"].split(" x ")[1].split(" + ")[0]
                entries = re.findall(r"([A-Z_]+)\[(\d+)\]", subject)
                assert any(int(i) >= before[name] for name, i in entries), p["source"]


def test_material_appended_later_adds_prompts_and_changes_no_earlier_one(prompts, monkeypatch):
    """A subject appended to a tuple after the last draw makes a new draw of its own; every earlier prompt stays,
    with its source. Negative control: the same subject inserted at the front shifts the committed draws."""
    before = {p["prompt"]: p["source"] for p in prompts}
    monkeypatch.setattr(chat, "EXPLAIN_QUESTIONS", chat.EXPLAIN_QUESTIONS + ("why zebras have stripes",))
    after = {p["prompt"]: p["source"] for p in chat_prompts(0)}
    new = {k: v for k, v in after.items() if k not in before}
    assert all(after[k] == v for k, v in before.items())
    assert len(new) == 5 and all(f"EXPLAIN_QUESTIONS[{len(chat.EXPLAIN_QUESTIONS) - 1}]" in v for v in new.values())
    monkeypatch.setattr(chat, "EXPLAIN_QUESTIONS", ("why zebras have stripes",) + chat.EXPLAIN_QUESTIONS[:-1])
    shifted = {p["prompt"] for p in chat_prompts(0)}
    assert not set(before) <= shifted


def test_new_prompts_are_split_by_subject_and_the_committed_sides_stay():
    """extend_split keeps every committed prompt on its side and splits the fresh ones whole subjects at a time: no
    fresh held-out prompt shares its subject with a training prompt. The committed file was made so: each subject of
    the later draw lies on one side, and over 200 of its prompts are held out. Negative control: a split by prompt
    (the rule before) puts phrasings of one subject on both sides."""
    from ddtree.training.prompts import extend_split, split_prompts, subject_of
    committed = json.loads(PROMPTS_FILE.read_text())
    sides = {}
    for side in ("train", "heldout"):
        for p in committed[side]:
            sides.setdefault(subject_of(p), set()).add(side)
    later = chat.draw(chat.random.Random("0:draw1"), *chat.DRAWS)
    assert all(len(sides[subject_of(p)]) == 1 for p in later)
    assert sum(sides[subject_of(p)] == {"heldout"} for p in later) > 200
    train, held = split_prompts(later, 250)
    assert not {subject_of(p) for p in train} & {subject_of(p) for p in held}
    assert 200 <= len(held) <= 300 and len(train) + len(held) == len(later)
    old = {"train": later[:100], "heldout": later[100:110]}
    train, held = extend_split(old, later, 0.04)
    assert [p["prompt"] for p in train[:100]] == [p["prompt"] for p in old["train"]]
    assert [p["prompt"] for p in held[:10]] == [p["prompt"] for p in old["heldout"]]
    by_prompt = set(chat.random.Random(1).sample(range(len(later)), 250))  # the negative control
    split_subjects = {subject_of(later[i]) for i in by_prompt} & {subject_of(p) for i, p in enumerate(later)
                                                                   if i not in by_prompt}
    assert split_subjects


def test_making_the_prompts_file_again_gives_the_committed_file(tmp_path):
    """`python -m ddtree.training.prompts` (in a fresh process: the standard-library prompts read the docstrings of
    the modules a process has imported) writes the committed file again byte for byte: every prompt of every draw is
    there on its side, and nothing drifts (it once reordered the keys of kept entries on every run). Those prompts
    also depend on the Python version, so only the file's own version can check."""
    import subprocess
    import sys

    committed = json.loads(PROMPTS_FILE.read_text())
    if sys.version.split()[0] != committed["meta"]["python"]:
        pytest.skip(f"the file was made with Python {committed['meta']['python']}")
    out = tmp_path / "prompts.json"
    subprocess.run([sys.executable, "-m", "ddtree.training.prompts", "--out", str(out)], check=True,
                   capture_output=True)
    assert out.read_bytes() == PROMPTS_FILE.read_bytes()


def test_material_file_loads_as_tuples_without_duplicate_entries():
    """Every table of data/chat_material.jsonl is a non-empty tuple of strings or (a, b) string pairs, with no entry
    twice; the module's tables are those (summary has no suffixes)."""
    material = chat.read_material()
    tables = {table for table in material if not table.startswith("SUFFIXES[")}
    assert tables >= set(chat.DRAWS[-1]) - {"MATH_PROBLEMS"}
    assert all(getattr(chat, table) == material[table] for table in tables)
    assert chat.SUFFIXES == {kind: material.get(f"SUFFIXES[{kind!r}]", ()) for kind in chat.SUFFIXES}
    assert chat.SUFFIXES["summary"] == () and len(chat.SUFFIXES) == 8
    for table, entries in material.items():
        assert isinstance(entries, tuple) and entries, table
        assert all(isinstance(e, str) or (isinstance(e, tuple) and len(e) == 2 and all(isinstance(v, str) for v in e))
                   for e in entries), table
        assert len(set(entries)) == len(entries), table


@pytest.mark.parametrize("line, message", [
    ('{"table": "DISHES", "text": "hummus"', "Expecting"),
    ('["DISHES", "hummus"]', 'not an object with a "table" name'),
    ('{"table": "DISHES", "text": "hummus", "pair": ["a", "b"]}', 'exactly one of "text" and "pair"'),
    ('{"table": "DISHES", "txt": "hummus"}', 'exactly one of "text" and "pair"'),
    ('{"table": "CHOICE_PAIRS", "pair": ["tea", "coffee", "cocoa"]}', '"pair" must be a list of two strings'),
    ('{"table": "DISHES", "text": 3}', '"text" must be a string'),
    ('{"table": "SUFFIXES", "kind": null, "text": "Be brief."}', '"kind" must be a string'),
    ("", "Expecting value"),
])
def test_a_malformed_material_line_is_an_error_naming_the_file_and_line(tmp_path, line, message):
    path = tmp_path / "material.jsonl"
    path.write_text('{"table": "DISHES", "text": "falafel"}\n' + line + "\n")
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}, line 2: .*{re.escape(message)}"):
        chat.read_material(path)


def test_a_material_line_not_in_utf8_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "material.jsonl"
    path.write_bytes(b'{"table": "DISHES", "text": "falafel"}\n{"table": "DISHES", "text": "cr\xe8pes"}\n')
    with pytest.raises(ValueError, match=r"line 2: .*utf-8"):
        chat.read_material(path)
