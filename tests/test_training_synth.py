"""ddtree.training.synth: Magpie and completion prompts, their cleaning, deduplication and held-out split."""
import ast

import pytest

from ddtree.training import synth
from ddtree.training.prompts import group_of


def prompt(text, kind="magpie-open", source="magpie:open:''"):
    return {"kind": kind, "group": group_of(kind), "source": source, "prompt": text}


def test_clean_request_keeps_requests_and_drops_degenerate_samples():
    assert synth.clean_request("  Write a poem about the sea.  ") == "Write a poem about the sea."
    assert synth.clean_request("Hi there") is None  # too short
    assert synth.clean_request("Tell me <|im_end|> about cats") is None  # special-token text
    assert synth.clean_request(" ".join(["again"] * 20)) is None  # one word over and over
    assert synth.clean_request("\n".join(["the same line here"] * 6)) is None  # one line over and over
    assert synth.clean_request("word " * (synth.MAX_WORDS + 1)) is None


def test_dedupe_drops_repeats_and_caps_a_shared_opening():
    same = [prompt("Write a poem about the sea."), prompt("write a POEM about the sea!")]
    assert len(synth.dedupe(same)) == 1
    opening = "Explain how the water cycle works in simple terms for"
    many = [prompt(f"{opening} reader number {k}") for k in range(6)]
    kept = synth.dedupe(many)
    assert [p["prompt"] for p in kept] == [p["prompt"] for p in many[:synth.MAX_SHARED_START]]


def test_split_by_subject_is_stable_and_keeps_a_module_on_one_side():
    prompts = synth.completion_prompts(modules=("textwrap", "shlex", "fnmatch", "glob", "heapq", "bisect"))
    assert prompts and all(p["kind"] == "completion" and p["group"] == "code" for p in prompts)
    train, heldout = synth.split_by_subject(prompts, 0.5)
    assert len(train) + len(heldout) == len(prompts)
    train_modules, held_modules = ({synth.subject(p) for p in side} for side in (train, heldout))
    assert train_modules and held_modules and not train_modules & held_modules
    # a prompt's side depends on its subject alone: splitting a subset puts every prompt where it was
    sub_train, sub_held = synth.split_by_subject(prompts[::3], 0.5)
    assert {p["prompt"] for p in sub_train} <= {p["prompt"] for p in train}
    assert {p["prompt"] for p in sub_held} <= {p["prompt"] for p in heldout}


def test_completion_prompts_hold_a_signature_and_docstring_and_no_body():
    import textwrap
    stub = synth.function_stub("dedent", textwrap.dedent)
    assert stub.startswith("def dedent(text):\n    \"\"\"") and stub.rstrip().endswith('"""')
    assert "return" not in stub.split('"""')[-1]
    assert synth.function_stub("f", lambda x: x) is None  # no docstring: no prompt
    prompts = synth.completion_prompts(modules=("textwrap",), frames=2)
    by_function = {}
    for p in prompts:
        by_function.setdefault(p["source"], []).append(p["prompt"])
    assert by_function and all(len(set(texts)) == 2 for texts in by_function.values())  # two distinct frames
    assert all("def " in text for texts in by_function.values() for text in texts)


@pytest.fixture(scope="module")
def target():
    from ddtree.models import load_target
    return load_target(device="cpu")


def test_magpie_requests_come_from_the_targets_own_user_turn(target):
    model, tokenizer = target
    prefix = synth.user_turn_prefix(tokenizer)
    assert prefix.endswith("user\n") and "assistant" not in prefix.split("user\n")[-1]
    written = synth.magpie_prompts(model, tokenizer, 8, batch_size=8, max_new_tokens=48, seed=1)
    assert written, "the target wrote no usable request in 8 tries"
    for p in written:
        assert p["kind"].removeprefix("magpie-") in synth.OPENERS
        opener = ast.literal_eval(p["source"].split(":", 2)[2])  # the source names the opener: magpie:<category>:<repr>
        assert p["prompt"].startswith(opener) and synth.clean_request(p["prompt"]) == p["prompt"]
    again = synth.magpie_prompts(model, tokenizer, 8, batch_size=8, max_new_tokens=48, seed=1)
    assert again == written  # seeded


def test_sharded_answers_cover_the_prompts_file_once_over_several_calls(target, tmp_path, monkeypatch):
    """Shard 0 writes the prompts and answers its part; a later shard reads that prompts file and answers the rest:
    together every training prompt once, at the temperature its index gives, as one unsharded call would."""
    import json

    from ddtree.training.data import SequenceData
    model, tokenizer = target
    few = synth.completion_prompts
    monkeypatch.setattr(synth, "completion_prompts", lambda seed: few(modules=("textwrap", "colorsys", "shlex"),
                                                                      seed=seed))
    common = dict(magpie=0, heldout_fraction=0.3, temperatures=(0.0, 1.0), gen_batch=8, max_new_tokens=3, seed=2)
    whole = synth.make(model, tokenizer, tmp_path / "one", **common)
    out = tmp_path / "sharded"
    with pytest.raises(SystemExit):  # a later shard before shard 0 wrote the prompts
        synth.main(["--out", str(out), "--device", "cpu", "--shard", "1", "--shards", "2"])
    synth.make(model, tokenizer, out, shard=0, shards=2, **common)
    prompts = (out / "prompts.json").read_bytes()
    synth.make(model, tokenizer, out, shard=1, shards=2, **common)
    assert (out / "prompts.json").read_bytes() == prompts == (tmp_path / "one" / "prompts.json").read_bytes()
    parts = [SequenceData.load(out / f"data-{k}.npz") for k in (0, 1)]
    ids = [set(p.prompt_ids.tolist()) for p in parts]
    train = json.loads(prompts)["train"]
    assert ids[0] and ids[1] and not ids[0] & ids[1] and ids[0] | ids[1] == set(range(len(train)))
    both = SequenceData.concat(parts)
    assert sorted(zip(both.prompt_ids.tolist(), both.temperatures.tolist())) == \
        sorted(zip(whole.prompt_ids.tolist(), whole.temperatures.tolist())) == \
        [(i, float(i % 2)) for i in range(len(train))]
    greedy = lambda d: {int(i): d.sequence(k) for k, i in enumerate(d.prompt_ids) if d.temperatures[k] == 0}  # noqa: E731
    assert {k: v.tolist() for k, v in greedy(both).items()} == {k: v.tolist() for k, v in greedy(whole).items()}
    manifests = [json.loads((out / f"manifest-{k}.json").read_text()) for k in (0, 1)]
    assert [m["shard"] for m in manifests] == [0, 1] and sum(m["sequences"] for m in manifests) == len(train)
    assert (out / "samples.jsonl").is_file() and not (out / "data.npz").exists()
