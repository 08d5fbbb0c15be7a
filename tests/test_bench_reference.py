"""bench/bench_reference.py: --reference-dir validation (always), and the adapter that runs the public DDTree reference
(liranringel/ddtree) on our pair, checked behaviourally when a checkout of it is present (it is never shipped here:
set DDTREE_REFERENCE_DIR or fetch it into .reference/ddtree; without it those tests skip)."""
import os
from pathlib import Path

import pytest
import torch
from bench_scripts import load_bench

from ddtree import Session
from ddtree.models import tiny_random_pair

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_DIR = Path(os.environ.get("DDTREE_REFERENCE_DIR") or ROOT / ".reference" / "ddtree")
bench = load_bench("bench_reference")

needs_reference = pytest.mark.skipif(
    not (REFERENCE_DIR / "ddtree.py").is_file(),
    reason=f"the public DDTree reference is not shipped; clone github.com/liranringel/ddtree into {REFERENCE_DIR} "
           "(or set DDTREE_REFERENCE_DIR) to run the adapter tests")


def fake_reference(folder: Path, *, marker: bool = True) -> Path:
    for name in bench.REFERENCE_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(bench.REFERENCE_MARKERS.get(name, "") + "\n" if marker else "# empty\n")
    return folder


def test_reference_dir_validation_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="--reference-dir is required.*git clone https://github.com/liranringel"):
        bench.check_reference_dir(None)
    with pytest.raises(ValueError, match="is not a folder"):
        bench.check_reference_dir(tmp_path / "absent")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        bench.check_reference_dir(tmp_path / "file")
    with pytest.raises(ValueError, match=r"not the DDTree reference .* lacks \['ddtree.py'"):
        bench.check_reference_dir(tmp_path)
    impostor = fake_reference(tmp_path / "impostor", marker=False)
    with pytest.raises(ValueError, match="ddtree.py defines no 'def ddtree_generate'"):
        bench.check_reference_dir(impostor)
    good = fake_reference(tmp_path / "good")
    assert bench.check_reference_dir(str(good)) == good


def test_command_line_refuses_a_bad_reference_dir(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.parse_args(["--reference-dir", str(tmp_path / "absent")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--reference-dir" in err and "is not a folder" in err
    with pytest.raises(SystemExit):
        bench.parse_args([])  # the folder is required
    args = bench.parse_args(["--reference-dir", str(fake_reference(tmp_path)), "--prompts", "1"])
    assert args.prompts == 1 and args.budgets == [32, 128]


def test_first_divergence():
    assert bench.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert bench.first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert bench.first_divergence([4], [5, 6]) == 0


def test_agreement_finds_the_divergence_and_its_margin():
    pair = tiny_random_pair(3)
    prompt = "def add(a, b):"
    greedy = Session(pair, prompt, method="ar", backend="reference", record=False).run(12, stop_on_eos=False)[0].tokens
    ids = pair.encode(prompt)
    logits = pair.target(torch.tensor([ids + greedy[:5]])).logits[0, -1]  # [vocab]
    other = list(greedy)
    other[5] = int(torch.topk(logits, 2).indices[1])  # the target's second choice at index 5
    found = bench.agreement(pair, ids, greedy, other)
    assert found["first_divergence"] == 5 and found["tokens"] == [greedy[5], other[5]]
    assert found["top2"] == found["tokens"] and found["margin"] > 0
    assert bench.agreement(pair, ids, greedy, list(greedy)) == {"first_divergence": None}


@pytest.fixture(scope="module")
def tiny():
    pair = tiny_random_pair(3)
    ref = bench.import_reference(REFERENCE_DIR, device=pair.device)
    return pair, ref, bench.reference_drafter(ref, pair.drafter)


@needs_reference
def test_reference_drafter_computes_what_ours_computes(tiny):
    pair, ref, draft = tiny
    torch.manual_seed(0)
    c, block = 11, pair.block_size
    features = torch.randn(c, len(pair.target_layer_ids) * pair.target.config.hidden_size)  # [c, ids * hidden]
    embeds = torch.randn(block, pair.target.config.hidden_size)  # [B, hidden]
    cache = pair.drafter.new_cache()
    pair.drafter.extend_context(cache, features, torch.arange(c))
    ours = pair.drafter(embeds, torch.arange(c, c + block), cache)  # [B, hidden]
    with torch.no_grad():
        theirs = draft(target_hidden=features[None], noise_embedding=embeds[None],
                       position_ids=torch.arange(c + block)[None], is_causal=False)[0]
    torch.testing.assert_close(theirs, ours, rtol=1e-5, atol=1e-5)
    wrong = bench.reference_drafter(ref, tiny_random_pair(4).drafter)  # negative control: other weights
    with torch.no_grad():
        other = wrong(target_hidden=features[None], noise_embedding=embeds[None],
                      position_ids=torch.arange(c + block)[None], is_causal=False)[0]
    assert not torch.allclose(other, ours, atol=1e-3)


@needs_reference
@pytest.mark.parametrize("method, budget, backend", [("ddtree", 8, "reference"), ("ddtree", 24, "reference"),
                                                     ("dflash", 1, "reference"), ("ddtree", 24, "native")])
def test_reference_on_our_pair_is_greedy_and_accepts_like_ours(tiny, method, budget, backend):
    """float32: the reference's speculative output equals autoregressive greedy, and its tokens per target forward
    equal ours round by round (same drafter, same trees; the native engine runs its kernels in Triton's interpreter)."""
    pair, ref, draft = tiny
    prompt, n = "def add(a, b):", 40
    ids = pair.encode(prompt)
    ar = Session(pair, prompt, method="ar", backend="reference", record=False).run(n, stop_on_eos=False)[0].tokens
    theirs = bench.run_reference(ref, pair, draft, ids, method, budget, n)
    ours = bench.run_ours(pair, prompt, method, budget, n, backend, warm=False)
    assert theirs.tokens == ar == ours.tokens
    assert theirs.lengths == ours.lengths
    if method == "ddtree":  # a random drafter's chain is never accepted, a tree's top-K now and then
        assert max(ours.lengths) > 1


@needs_reference
@pytest.mark.slow
def test_reference_on_the_embedded_pair_matches_ours_round_by_round():
    """The shipped pair in float32 on a CPU, through the script's own entry point: identical tokens, acceptance
    well above one token per forward on both sides, and the same acceptance."""
    out = bench.main(["--reference-dir", str(REFERENCE_DIR), "--device", "cpu", "--dtype", "float32",
                      "--prompt-set", "code", "--prompts", "1", "--max-new-tokens", "16", "--budgets", "32",
                      "--out", str(ROOT / "test-artifacts" / "bench_reference")])
    pairs = out["agreement"][0]["pairs"]
    assert all(d["first_divergence"] is None for d in pairs.values()), pairs
    for row in out["rows"][1:]:
        assert row["ours_cold"]["acceptance"] == row["ref_cold"]["acceptance"] > 2, row
