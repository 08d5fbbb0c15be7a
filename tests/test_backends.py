"""One Session interface on two backends: the same seed gives the same tokens and records on the reference (Hugging
Face) and native (static-cache engine) backends, greedy and sampled; a failed step changes nothing; per-request
budgets; what the native engine's attention kernel read, and the probe of the mask it applied."""
import subprocess
from pathlib import Path

import pytest
import torch

import ddtree
from ddtree import Session
from ddtree.models import tiny_random_pair

PROMPTS = ["first prompt", "a second, longer prompt here", "3"]
SHARED_TOOL = Path(__file__).resolve().parents[2] / "shared" / "tools" / "import-cycles"


@pytest.fixture(scope="module")
def pair():
    return tiny_random_pair(1)


def assert_same_records(a, b):
    assert len(a.requests) == len(b.requests)
    for x, y in zip(a.requests, b.requests):
        for field in ("tokens", "parents", "depths", "ranks"):
            assert torch.equal(getattr(x.tree, field), getattr(y.tree, field)), field
        torch.testing.assert_close(x.tree.node_logws, y.tree.node_logws, atol=1e-5, rtol=1e-5)
        for field in ("context_len", "input_ids", "positions", "draft_top_tokens", "target_top_tokens",
                      "target_choice", "accepted", "accepted_tokens", "bonus_token", "committed_text"):
            assert getattr(x, field) == getattr(y, field), field
        torch.testing.assert_close(torch.tensor(x.target_top_probs), torch.tensor(y.target_top_probs), atol=1e-4,
                                   rtol=1e-4)


@pytest.mark.parametrize("method, budget", [("ddtree", 6), ("ddtree", (2, 9, 5)), ("dflash", 0), ("ar", 0)])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_same_seed_same_tokens_and_records_on_both_backends(pair, method, budget, temperature):
    options = dict(method=method, budget=budget, seed=11, verify="sampled" if temperature else "greedy",
                   temperature=temperature or 1.0, top_p=0.95)
    ref = Session(pair, PROMPTS, backend="reference", **options)
    nat = Session(pair, PROMPTS, backend="native", **options)
    assert ref.tokens == nat.tokens  # the prefill's tokens too
    for _ in range(4):
        assert_same_records(ref.step(), nat.step())
    assert ref.tokens == nat.tokens and ref.acceptance_lengths == nat.acceptance_lengths
    if temperature:  # and the seed matters
        other = Session(pair, PROMPTS, backend="native", **(options | {"seed": 12}))
        other.run(12, stop_on_eos=False)
        nat.run(12, stop_on_eos=False)
        assert other.generated != nat.generated


@pytest.mark.gpu
@pytest.mark.parametrize("verify", ["greedy", "sampled"])
def test_same_seed_same_tokens_on_both_backends_on_gpu(verify):
    pair = tiny_random_pair(1, device="cuda")
    options = dict(budget=(3, 12, 6), verify=verify, temperature=1.0, seed=5)
    ref = Session(pair, PROMPTS, backend="reference", **options).run(24, stop_on_eos=False)
    nat = Session(pair, PROMPTS, backend="native", **options).run(24, stop_on_eos=False)
    assert [g.tokens for g in ref] == [g.tokens for g in nat]


@pytest.mark.slow
def test_same_seed_same_tokens_on_both_backends_on_smollm2():
    from ddtree.models import load_default_pair
    pair = load_default_pair(dtype=torch.float32)  # bfloat16's rounding differs between the two forwards' kernels
    options = dict(budget=16, verify="sampled", temperature=1.0, seed=3)
    prompts = ["Write a haiku about trees.", "What is 2+2?"]
    ref = Session(pair, prompts, backend="reference", **options).run(24, stop_on_eos=False)
    nat = Session(pair, prompts, backend="native", **options).run(24, stop_on_eos=False)
    assert [g.tokens for g in ref] == [g.tokens for g in nat]
    assert [g.acceptance_lengths for g in ref] == [g.acceptance_lengths for g in nat]


@pytest.mark.parametrize("backend", ["reference", "native"])
def test_every_session_is_a_batch(pair, backend):
    s = Session(pair, "one prompt", budget=4, backend=backend)
    assert s.batch_size == 1 and s.backend.name == backend and len(s.prompt_lens) == 1
    rec = s.step()
    assert len(rec.requests) == 1 and len(s.generated) == 1
    gens = s.run(10, stop_on_eos=False)
    assert len(gens) == 1 and gens[0].tokens == s.generated[0][:10]
    twin = s.fork(budget=2)
    assert twin.settings.budget == 2 and s.settings.budget == 4 and twin.records == s.records
    with pytest.raises(ValueError, match="fork takes"):
        s.fork(backend="native")


@pytest.mark.parametrize("backend", ["reference", "native"])
@pytest.mark.parametrize("verify", ["greedy", "sampled"])
def test_a_failed_step_changes_nothing(backend, verify):
    """NaN target logits in round 2: the step raises, and afterwards (weights restored) the session continues
    exactly as one that never failed: tokens, caches and the random state were left as they were."""
    pair = tiny_random_pair(6)
    options = dict(budget=5, backend=backend, verify=verify, temperature=1.0, seed=2)
    s = Session(pair, PROMPTS[:2], **options)
    clean = Session(pair, PROMPTS[:2], **options)
    s.step(), clean.step()
    row = pair.target.lm_head.weight[7].clone()
    pair.target.lm_head.weight[7] = float("nan")
    try:
        with pytest.raises(ValueError, match="round 1:.*NaN"):
            s.step()
    finally:
        pair.target.lm_head.weight[7] = row
    assert len(s.records) == 1 and s.tokens == clean.tokens
    if backend == "reference":
        assert [c.length for c in s.backend.target_caches] == s.context_lens
    else:
        assert s.backend.decoder.seq_lens.tolist() == s.context_lens
    for _ in range(3):
        assert_same_records(s.step(), clean.step())
    assert s.tokens == clean.tokens


def test_per_request_budgets_cut_each_tree(pair):
    s = Session(pair, PROMPTS, budget=[1, 12, 4], backend="native")
    rec = s.step()
    assert rec.num_draft_tokens == 13 and rec.budget == 12
    assert [r.n_nodes for r in rec.requests] == [2, 13, 5]
    assert all(len(r.input_ids) == 13 for r in rec.requests)
    with pytest.raises(ValueError, match="budget entry"):
        Session(pair, PROMPTS, budget=[1, 0, 4])


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
def test_native_probe_recovers_the_ancestor_masks(device):
    """The probe of the mask the attention kernel applied (the Triton bitmask kernel on CUDA, SDPA on the CPU)
    equals every request's ancestor mask, padding rows included."""
    pair = tiny_random_pair(1, device=device)
    s = Session(pair, PROMPTS, budget=[2, 7, 4], backend="native")
    s.step()
    rec = s.step(probe=True)
    assert rec.kernel is not None and rec.kernel.custom_mask is None
    for req, applied in zip(rec.requests, rec.kernel.applied):
        assert torch.equal(applied, req.attention_mask())
    assert s.step().kernel is None  # probing is opt-in
    with pytest.raises(ValueError, match="probe=True needs backend='native'"):
        Session(pair, PROMPTS, budget=4, backend="reference").step(probe=True)


@pytest.mark.parametrize("device", DEVICES)
def test_custom_mask_kernel_padded_agrees_and_unpadded_corrupts(device):
    """The serving engine's flat mask read by the workbench's Triton kernel (Triton's interpreter on a CPU): padded
    trees decode exactly as the default attention and the probe finds no wrong cell; unpadded packing makes the
    requests after the small tree read shifted bits, which the probe and ddtree.check_verify_batch both find."""
    pair = tiny_random_pair(1, device=device)
    options = dict(budget=[2, 9, 9], backend="native", attention="torch" if device == "cpu" else "triton")
    plain = Session(pair, PROMPTS, **options)
    options["attention"] = "custom_mask"
    padded = Session(pair, PROMPTS, **options)
    unpadded = Session(pair, PROMPTS, mask_layout="unpadded", **options)
    a, b, c = plain.step(), padded.step(probe=True), unpadded.step(probe=True)
    assert_same_records(a, b)
    for rec, layout in ((b, "padded"), (c, "unpadded")):
        kernel = rec.kernel
        batch = ddtree.pack_verify_batch([r.tree for r in rec.requests], [r.context_len for r in rec.requests],
                                         rec.num_draft_tokens, layout=layout)
        assert kernel.attention == "custom_mask" and kernel.mask_layout == layout
        assert torch.equal(kernel.custom_mask, batch.custom_mask) and torch.equal(kernel.mask_indptr, batch.mask_indptr)
        flagged = {cell.request for cell in ddtree.check_verify_batch(batch)}
        wrong = {k for k, applied in enumerate(kernel.applied) if not torch.equal(applied, ddtree.expected_mask(batch, k))}
        assert wrong == flagged == (set() if layout == "padded" else {1, 2})
        for k, applied in enumerate(kernel.applied):  # the kernel reads the flat buffer for the draft columns only
            ctx = rec.requests[k].context_len
            assert applied[:, :ctx].all()
            assert torch.equal(applied[:, ctx:], ddtree.effective_mask(batch, k)[:, ctx:])


@pytest.mark.skipif(not SHARED_TOOL.exists(), reason="the shared import-cycles tool is not beside this checkout")
def test_no_import_loops():
    done = subprocess.run([str(SHARED_TOOL)], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("backend", ["reference", "native"])
def test_every_consumer_takes_every_session(pair, backend, tmp_path):
    """Traces, the HTML report, check_lossless and sweep take sessions of either backend and any batch size."""
    from ddtree.report import render_html
    from ddtree.sweep import summarize, sweep
    s = Session(pair, PROMPTS, budget=[3, 6, 4], backend=backend)
    s.run(6, stop_on_eos=False)
    ddtree.save_trace(s.records, tmp_path / "t.json")
    loaded, _ = ddtree.load_trace(tmp_path / "t.json")
    assert [r.to_dict() for r in loaded] == [r.to_dict() for r in s.records]
    assert len(loaded[0].requests) == 3
    for b in range(3):
        page = render_html(s.records, request=b)
        assert s.records[0].requests[b].committed_text.replace("<", "&lt;")[:3] in page
    report = ddtree.check_lossless(pair, PROMPTS[:1], 8, budget=4, backend=backend)
    assert report.ok and report.tokens_checked == 16
    rows = sweep(pair, PROMPTS[:1], [2, 4], max_new_tokens=6, backend=backend, progress=False)
    assert {r["budget"] for r in summarize(rows)} == {0, 2, 4}


def test_both_backends_implement_the_backend_protocol_completely():
    """ddtree.rounds.Backend is what a Session drives: every member, with the same parameters, on both backends."""
    import inspect

    from ddtree.engine.backend import NativeBackend
    from ddtree.reference import ReferenceBackend
    from ddtree.rounds import Backend

    members = [m for m in vars(Backend) if not m.startswith("_")] + list(Backend.__annotations__)
    assert {"start", "finish", "cancel", "park", "fork", "prefill", "budget_costs", "name", "max_len"} <= set(members)
    pair = ddtree.models.tiny_random_pair(0)
    for cls in (ReferenceBackend, NativeBackend):
        backend = cls(pair, 2, 64)
        for m in members:
            assert hasattr(backend, m), f"{cls.__name__} lacks {m}"
            want = getattr(Backend, m, None)
            if inspect.isfunction(want):
                assert list(inspect.signature(getattr(cls, m)).parameters) == list(inspect.signature(want).parameters)


def test_the_reference_backend_parks_a_request_finished_behind_its_round():
    """park drops the last round's commit of a request: its caches as before that round, so a later round
    decodes what it would have decoded."""
    pair = ddtree.models.tiny_random_pair(0)
    s = Session(pair, ["one", "two"], budget=4, backend="reference")
    s.step()
    before = [list(t) for t in s.tokens]
    lengths = [c.length for c in s.backend.target_caches], [c.length for c in s.backend.draft_caches]
    s.step()
    s.backend.park([1], before)
    assert s.backend.target_caches[1].length == lengths[0][1] and s.backend.draft_caches[1].length == lengths[1][1]
    assert s.backend.target_caches[0].length > lengths[0][0]  # the other request keeps its commit
