"""The drafter training job: deepening a drafter (grown), several shapes side by side, keep-best checkpoints."""
import json

import pytest
import torch
from safetensors import safe_open
from test_trained_drafter import TINY, tiny_drafter

from ddtree.models import DFlashDrafter
from ddtree.models.pair import DEFAULT_DRAFTER_DIR
from ddtree.training import train
from ddtree.training.data import SequenceData
from ddtree.training.forward import training_forward


def test_grown_drafter_starts_as_its_source_and_its_new_layers_learn():
    small = tiny_drafter()
    big = train.grown(small, 4)
    assert big.config.num_hidden_layers == 4 and len(big.layers) == 4
    assert big.config.layer_types == TINY["layer_types"] + ("full_attention", "full_attention")
    gen = torch.Generator().manual_seed(0)
    table = torch.randn(TINY["vocab_size"], 32, generator=gen)
    features = torch.randn(2, 12, 64, generator=gen)
    tokens = torch.randint(0, 299, (2, 12), generator=gen)
    anchors = torch.tensor([[1, 7], [9, 2]])
    want = training_forward(small, table, features, tokens, anchors)
    got = training_forward(big.requires_grad_(True), table, features, tokens, anchors)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    got.square().sum().backward()
    for layer in big.layers[2:]:  # zero output projections still receive gradient
        assert layer.self_attn.o_proj.weight.grad.abs().sum() > 0
        assert layer.mlp.down_proj.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="--layers 1 is fewer"):
        train.grown(small, 1)


def test_a_prompt_subset_keeps_the_files_mix_of_groups():
    """--max-prompts and the validation prompts take evenly spread prompts, not a prefix: the committed file lists
    the first drafter's prompts (no chat kinds beyond topics) first."""
    from ddtree.training.prompts import PROMPTS_FILE, group_of
    side = json.loads(PROMPTS_FILE.read_text())["train"]
    chat_share = lambda prompts: sum(group_of(p["kind"]) == "chat" for p in prompts) / len(prompts)  # noqa: E731
    whole = chat_share(side)
    for count in (64, 4096):
        picked = [side[i] for i in train.spread(len(side), count)]
        assert len(picked) == count
        assert abs(chat_share(picked) - whole) < 0.03  # sampling noise within the shuffled regions of the file
    assert {p["kind"] for p in picked} == {p["kind"] for p in side}  # 4096: every kind
    prefix = side[:4096]  # the negative control: the prefix misses the new kinds, and most of the chat
    assert {p["kind"] for p in prefix} != {p["kind"] for p in side}
    assert whole - chat_share(prefix) > 0.3
    assert list(train.spread(5, 10)) == [0, 1, 2, 3, 4]


def test_parse_args_rejects_bad_shapes():
    with pytest.raises(SystemExit):
        train.parse_args(["--out", "x", "--steps", "1", "--layers", "3", "3"])
    with pytest.raises(SystemExit):
        train.parse_args(["--out", "x", "--steps", "1", "--layers", "3", "5", "--init-from", "a", "b", "c"])


def test_parse_args_rejects_bad_soft_weights():
    for weights in (["0.5", "0.5"], ["1.5"], ["-0.1"]):
        with pytest.raises(SystemExit):
            train.parse_args(["--out", "x", "--steps", "1", "--soft-weight", *weights])


def toy_prompts(tmp_path):
    prompts = tmp_path / "prompts.json"
    texts = ["Name a fruit.", "Say hello.", "Count to three.", "What is 2 + 2?", "Name a colour.", "Say bye."]
    prompts.write_text(json.dumps({"train": [{"kind": "topic", "prompt": t} for t in texts], "heldout": []}))
    return prompts


def test_shapes_and_soft_weights_train_side_by_side_from_the_shipped_drafter(tmp_path):
    """Real target on CPU at toy scale: 3 and 4 layers from the shipped drafter, each with hard and half-soft
    labels, keep-best checkpoints."""
    train.main(["--out", str(tmp_path / "run"), "--device", "cpu", "--prompts", str(toy_prompts(tmp_path)),
                "--max-new-tokens", "8", "--gen-batch", "6", "--temperatures", "0", "--val-prompts", "2",
                "--val-sequences", "2", "--steps", "4", "--batch-size", "2", "--anchors", "3", "--log-every", "2",
                "--val-every", "2", "--warmup", "1", "--layers", "3", "4", "--soft-weight", "0", "0.5",
                "--init-from", str(DEFAULT_DRAFTER_DIR), "--keep-best"])
    records = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    steps = [r for r in records if "step" in r]
    assert [r["step"] for r in steps] == [0, 2, 4, 4]  # the starting drafters, every 2 steps, the final record
    names = {"3L-soft0": 3, "3L-soft0.5": 3, "4L-soft0": 4, "4L-soft0.5": 4}
    for name, layers in names.items():
        losses = [r[name]["val_loss"] for r in steps]
        assert steps[-1][name]["best_val_loss"] == pytest.approx(min(losses))
        saved = DFlashDrafter.from_pretrained(tmp_path / "run" / f"ckpt-{name}")
        assert saved.config.num_hidden_layers == layers
        with safe_open(next((tmp_path / "run" / f"ckpt-{name}").glob("*.safetensors")), "pt") as shard:
            assert shard.get_tensor(next(iter(shard.keys()))).dtype == torch.bfloat16
    for r in steps[1:3]:
        assert len({r[name]["tokens"] for name in names}) == 1  # the same batches and anchors
        assert r["3L-soft0"]["loss"] == r["3L-soft0"]["hard_loss"]  # no soft term
        assert r["3L-soft0.5"]["loss"] != r["3L-soft0.5"]["hard_loss"]
    assert steps[1]["3L-soft0"]["val_hard_loss"] == steps[1]["3L-soft0"]["val_loss"]
    start = steps[0]  # every shape starts as the shipped drafter (grown layers add nothing): equal hard losses
    assert len({round(start[name]["val_hard_loss"], 4) for name in names}) == 1


def test_stop_at_that_leaves_no_training_time_stops_after_saving_the_data(tmp_path):
    """--stop-at counts from the command's start: when generation has used it up, the job says so and keeps the
    generated data (it once trained on with no end at the peak learning rate)."""
    with pytest.raises(SystemExit, match="no time is left to train"):
        train.main(["--out", str(tmp_path / "run"), "--device", "cpu", "--prompts", str(toy_prompts(tmp_path)),
                    "--max-new-tokens", "2", "--gen-batch", "6", "--temperatures", "0", "--val-prompts", "2",
                    "--stop-at", "1"])
    assert (tmp_path / "run" / "data.npz").is_file()


def test_sampled_answers_alone_are_refused_before_any_work(tmp_path):
    """The validation reads greedy answers: without 0 among --temperatures and without --data holding greedy
    answers, the command stops at once (it used to generate and train, then fail at the first validation)."""
    args = ["--out", str(tmp_path / "run"), "--device", "cpu", "--prompts", str(toy_prompts(tmp_path)),
            "--max-new-tokens", "2", "--gen-batch", "6", "--val-prompts", "2", "--steps", "1"]
    with pytest.raises(SystemExit, match="--temperatures 0.7 1: the validation reads greedy answers"):
        train.main([*args, "--temperatures", "0.7", "1"])
    assert not (tmp_path / "run").exists()
    sampled = SequenceData.from_lists([[1, 2, 3]], [1], [0], [0.7])
    sampled.save(tmp_path / "sampled.npz")
    with pytest.raises(SystemExit, match="greedy answers"):
        train.main([*args, "--temperatures", "0.7", "--data", str(tmp_path / "sampled.npz")])


def test_unanswered_only_answers_the_prompts_added_since_and_ids_index_the_file(tmp_path):
    """--unanswered-only with --data answers only the prompts that data lacks (prompts appended to the file since),
    at every --temperatures, with ids indexing the prompts file (also under --max-prompts); data made from a longer
    prompts file and --unanswered-only without --data are refused before any work."""
    prompts = toy_prompts(tmp_path)
    earlier = SequenceData.from_lists([[1, 2, 3, 4, 5, 6, 7]] * 3, [2] * 3, [0, 1, 2], [0.0] * 3)
    earlier.save(tmp_path / "earlier.npz")
    args = ["--device", "cpu", "--prompts", str(prompts), "--max-new-tokens", "2", "--gen-batch", "6",
            "--val-prompts", "2", "--val-sequences", "2", "--steps", "1", "--batch-size", "2", "--anchors", "2",
            "--data", str(tmp_path / "earlier.npz"), "--unanswered-only", "--temperatures", "0", "1"]
    train.main(["--out", str(tmp_path / "run"), *args])
    answered = SequenceData.load(tmp_path / "run" / "data.npz")
    assert sorted(zip(answered.prompt_ids.tolist(), answered.temperatures.tolist())) == \
        [(i, t) for i in (3, 4, 5) for t in (0.0, 1.0)]
    train.main(["--out", str(tmp_path / "subset"), *args, "--max-prompts", "3"])  # prompts 0, 2 (answered) and 5
    assert SequenceData.load(tmp_path / "subset" / "data.npz").prompt_ids.tolist() == [5, 5]
    longer = SequenceData.from_lists([[1, 2, 3, 4]], [2], [6], [0.0])
    longer.save(tmp_path / "longer.npz")
    with pytest.raises(SystemExit, match="answers prompt id 6, but .* has 6 training prompts"):
        train.main(["--out", str(tmp_path / "bad"), *args[:-6], "--data", str(tmp_path / "longer.npz")])
    with pytest.raises(SystemExit, match="--unanswered-only answers the prompts that no --data file answers"):
        train.main(["--out", str(tmp_path / "bad"), *args[:-6], "--unanswered-only", "--temperatures", "0"])
    assert not (tmp_path / "bad").exists()


def test_the_engine_answers_as_generate():
    """The native engine's answers (each prompt prefilled alone, then the whole batch a token a forward) equal
    Hugging Face generate's greedy answers on the real target; sampled answers follow the seed and end at EOS."""
    from ddtree.models import load_target
    from ddtree.training.data import generate_responses
    target, tokenizer = load_target(device="cpu")
    prompts = ["List three fruits.", "Write a Python function that adds two numbers."]  # prompts of two lengths
    reference = generate_responses(target, tokenizer, prompts, [0.0], max_new_tokens=10, batch_size=2)
    fast = generate_responses(target, tokenizer, prompts, [0.0], max_new_tokens=10, batch_size=2, engine=True)
    assert [s.tolist() for s in map(reference.sequence, range(2))] == [s.tolist() for s in map(fast.sequence, range(2))]
    assert list(fast.prompt_lens) == list(reference.prompt_lens) and len(set(fast.prompt_lens)) == 2
    sampled = [generate_responses(target, tokenizer, prompts, [1.5], max_new_tokens=10, batch_size=2, seed=4,
                                  engine=True) for _ in range(2)]
    assert [s.tolist() for s in map(sampled[0].sequence, range(2))] == \
        [s.tolist() for s in map(sampled[1].sequence, range(2))]
    eos = target.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, (list, tuple)) else [eos])
    for i in range(2):
        answer = sampled[0].sequence(i)[sampled[0].prompt_lens[i]:].tolist()
        assert 1 <= len(answer) <= 10 and not eos & set(answer[:-1])  # cut at its first EOS, if any
        assert answer != fast.sequence(i)[fast.prompt_lens[i]:].tolist()[:len(answer)]  # not the greedy answer
