"""The native engine (static cache, padded tree batches) against the Hugging Face reference path."""
import copy

import pytest
import torch

import ddtree
from ddtree import Session
from ddtree.engine import NativeDecoder
from ddtree.models import TargetCache, load_pair, target_forward, tiny_random_pair


@pytest.fixture(scope="module")
def pair():
    return tiny_random_pair(1)


def test_tree_forward_and_commit_match_the_reference(pair):
    prompt = list(range(20, 33))
    dec = NativeDecoder(pair.target, batch_size=2, max_len=64, layer_ids=pair.target_layer_ids)
    n = len(prompt)
    pos = torch.arange(n)
    dec.forward(torch.tensor([prompt[:5]]), pos[None, :5], (pos[:5] - 1)[None], request=0)
    dec.commit(pos[None, :5], torch.tensor([5]), request=0)
    dec.forward(torch.tensor([prompt]), pos[None], (pos - 1)[None], request=1)
    dec.commit(pos[None], torch.tensor([n]), request=1)
    ref_cache = TargetCache()
    target_forward(pair.target, prompt, pos, None, ref_cache, [])
    tree = ddtree.build_tree(torch.randn(5, pair.vocab_size, generator=torch.Generator().manual_seed(0)), 9)
    tree = tree.with_root_token(7)
    q = 12  # padded rows
    parents = torch.full((2, q), -1)
    parents[1, :tree.n_nodes] = tree.parents
    ids = torch.full((2, q), 7)
    ids[1, :tree.n_nodes] = tree.tokens
    positions = torch.full((2, q), n)
    positions[1, :tree.n_nodes] = n + tree.depths
    positions[0] = 5
    logits, feats = dec.forward(ids, positions, parents)
    mask = ddtree.tree_attention_mask(tree, n)
    want, want_feats = target_forward(pair.target, tree.tokens, n + tree.depths, mask, ref_cache,
                                      pair.target_layer_ids)
    torch.testing.assert_close(logits[1, :tree.n_nodes], want, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(feats[1, :tree.n_nodes], want_feats, atol=1e-4, rtol=1e-4)
    accepted = tree.path(tree.n_nodes - 1)
    acc = torch.full((2, q), -1)
    acc[0, 0] = 0
    acc[1, :len(accepted)] = torch.tensor(accepted)
    dec.commit(acc, torch.tensor([1, len(accepted)]))
    assert dec.seq_lens.tolist() == [6, n + len(accepted)]
    ref_cache.compact(n, accepted)
    for i, layer in enumerate(ref_cache.hf.layers):
        torch.testing.assert_close(dec.k[i][1, :, :n + len(accepted)], layer.keys[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(dec.v[i][1, :, :n + len(accepted)], layer.values[0], atol=1e-5, rtol=1e-5)


PROMPTS = ["first prompt", "a second, longer prompt here", "3"]


@pytest.mark.parametrize("method, budget", [("ddtree", 6), ("dflash", 0), ("ar", 0)])
def test_batch_matches_reference_sessions(pair, method, budget):
    batch = Session(pair, PROMPTS, method=method, budget=budget, backend="native")
    assert batch.backend.name == "native" and batch.batch_size == 3
    gens = batch.run(20, stop_on_eos=False)
    for prompt, gen in zip(PROMPTS, gens):
        ref = Session(pair, prompt, method=method, budget=budget, backend="reference").run(20, stop_on_eos=False)[0]
        ar = Session(pair, prompt, method="ar").run(20, stop_on_eos=False)[0]
        assert gen.tokens == ref.tokens == ar.tokens
        assert len(gen.acceptance_lengths) == len(batch.records)
    rec = batch.records[0]
    assert len(rec.requests) == 3 and rec.num_draft_tokens == {"ddtree": 7, "dflash": pair.block_size, "ar": 1}[method]
    for b, req in enumerate(rec.requests):
        assert req.context_len == batch.prompt_lens[b]
        assert len(req.input_ids) == rec.num_draft_tokens


def test_native_backend_single_prompt_sampled_and_fork(pair):
    s = Session(pair, "sample me", backend="native", verify="sampled", temperature=1.0, seed=4, budget=5)
    assert s.backend.name == "native" and s.batch_size == 1
    s.step()
    twin = s.fork()
    assert s.step().requests[0].committed == twin.step().requests[0].committed
    assert s.tokens == twin.tokens
    again = Session(pair, "sample me", backend="native", verify="sampled", temperature=1.0, seed=4, budget=5)
    again.step()
    again.step()
    assert again.tokens == s.tokens


def test_bad_engine_input(pair):
    with pytest.raises(ValueError, match="backend"):
        Session(pair, "x", backend="fast")
    with pytest.raises(ValueError, match="is too long"):
        Session(pair, ["x" * 50], max_len=40, budget=4, backend="native")
    with pytest.raises(ValueError, match="attention"):
        Session(pair, ["x"], attention="flash", backend="native")
    with pytest.raises(ValueError, match="cuda_graphs=True needs a CUDA pair"):
        Session(pair, ["x"], cuda_graphs=True, backend="native")  # a CPU pair
    with pytest.raises(ValueError, match="backend='native' only"):
        Session(pair, ["x"], cuda_graphs=True, backend="reference")
    with pytest.raises(ValueError, match="unknown Session options"):
        Session(pair, ["x"], graphs=True)
    with pytest.raises(ValueError, match="mask_layout='unpadded' needs attention='custom_mask'"):
        Session(pair, ["x"], mask_layout="unpadded", backend="native")
    with pytest.raises(ValueError, match="one entry per request"):
        Session(pair, ["x", "y"], budget=[3, 4, 5])


def test_a_session_says_which_fast_paths_run_and_why_not(pair):
    native = Session(pair, ["x", "y"], budget=4, backend="native")
    assert not native.backend.cuda_graphs  # the default: graphs where they can run, and a CPU pair cannot
    assert "CUDA graphs off: needs a CUDA pair" in repr(native) and "overlap off: on CUDA only" in repr(native)
    assert "2 requests, ddtree, budget 4, greedy, 0 rounds" in repr(native)
    reference = Session(pair, "x", budget=4, backend="reference", cuda_graphs=False, overlap=False)  # "off" is fine
    assert reference.fast_path.startswith("reference backend") and "budget='auto' stops speculating" in repr(reference)
    assert "stops speculating" not in Session(pair, "x", budget="auto", backend="reference").fast_path
    with pytest.raises(ValueError, match="cuda_graphs must be True or False"):
        Session(pair, "x", backend="native", cuda_graphs="yes")


@pytest.mark.parametrize("native_bf16", [True, False])
def test_a_float32_cpu_session_names_bfloat16_where_the_cpu_has_it(pair, monkeypatch, native_bf16):
    import ddtree.session
    monkeypatch.setattr(ddtree.session, "native_bfloat16_cpu", lambda: native_bf16)
    assert pair.dtype == torch.float32
    told = "multiplies bfloat16 natively" in Session(pair, "x", budget=4, backend="reference").fast_path
    assert told == native_bf16
    bf16 = load_pair((copy.deepcopy(pair.target).to(torch.bfloat16), pair.tokenizer), None)
    assert "multiplies bfloat16" not in Session(bf16, "x", method="ar", backend="reference").fast_path


@pytest.mark.gpu
def test_a_default_session_on_cuda_replays_graphs_and_decodes_the_eager_tokens():
    """Issue 42: a Session naming no flag runs the fast path on CUDA (graphs; overlap where records allow), tells
    why where a part stays off, and decodes the same tokens as the eager engine."""
    pair = tiny_random_pair(3, device="cuda")
    default = Session(pair, PROMPTS, budget=10)
    assert default.backend.name == "native" and default.backend.cuda_graphs and not default.overlap
    assert "CUDA graphs on" in repr(default) and "overlap off: records read each round" in repr(default)
    assert "record=False runs at the benchmark's speed" in repr(default)
    fast = Session(pair, PROMPTS, budget=10, record=False)
    assert fast.backend.cuda_graphs and fast.overlap and "overlap on" in repr(fast) and "record=" not in repr(fast)
    masked = Session(pair, PROMPTS, budget=10, attention="custom_mask")
    assert "CUDA graphs off: attention='custom_mask'" in repr(masked)
    eager = Session(pair, PROMPTS, budget=10, cuda_graphs=False).run(24, stop_on_eos=False)
    for s in (default, fast):
        assert [g.tokens for g in s.run(24, stop_on_eos=False)] == [g.tokens for g in eager]


@pytest.mark.gpu
def test_triton_attention_engine_matches_torch_on_gpu():
    pair = tiny_random_pair(2, device="cuda")
    a = Session(pair, PROMPTS, budget=12, attention="triton").run(24, stop_on_eos=False)
    b = Session(pair, PROMPTS, budget=12, attention="torch").run(24, stop_on_eos=False)
    assert [g.tokens for g in a] == [g.tokens for g in b]


@pytest.mark.gpu
@pytest.mark.parametrize("verify", ["greedy", "sampled"])
def test_cuda_graph_replay_matches_eager_on_gpu(verify):
    """Greedy and sampled rounds replay from CUDA graphs (nothing in a stage may synchronise with the host)."""
    pair = tiny_random_pair(3, device="cuda")
    options = dict(budget=10, verify=verify, temperature=0.9, top_p=0.95, seed=4)
    eager = Session(pair, PROMPTS, cuda_graphs=False, **options).run(24, stop_on_eos=False)
    graphed = Session(pair, PROMPTS, cuda_graphs=True, record=False, **options).run(24, stop_on_eos=False)
    assert [g.tokens for g in eager] == [g.tokens for g in graphed]
    assert [g.acceptance_lengths for g in eager] == [g.acceptance_lengths for g in graphed]


def _reads_what_the_default_stream_wrote(context) -> bool:
    """Whether a kernel queued inside `context` reads a value the default stream writes behind about a second of
    sleep. The read runs once before the sleep, so that nothing between the sleep and it waits for the device."""
    written, read = torch.zeros(1, device="cuda"), torch.zeros(1, device="cuda")
    with context():  # once before the sleep: a first launch, or the stream pool's creation, waits for the device
        torch.mul(written, 1.0, out=read)
    written.fill_(0.0)
    torch.cuda.synchronize()
    torch.cuda._sleep(2_000_000_000)
    written.fill_(1.0)
    with context():
        torch.mul(written, 1.0, out=read)
    torch.cuda.synchronize()
    return read.item() == 1.0


@pytest.mark.gpu
def test_the_first_graphed_round_waits_for_the_default_stream_on_gpu(monkeypatch):
    """A graphed session's first round warms up off the default stream, before its capture, inside side_stream. That
    must order the warm-up after what the default stream has queued (on a GPU busy with another process, a warm-up
    that did not wait read token ids before they were written). The probe above sees the race: a side stream without
    the wait reads the value before it is written. A whole session cannot show it: its warm-up launches kernels for
    the first time and takes the process's first pool stream, either of which waits for the device (measured on the
    H200: bench/results/warmup_stream_race_h200.md)."""
    from contextlib import contextmanager

    from ddtree.engine import device_round

    @contextmanager
    def without_the_wait():  # side_stream less its first wait: the negative control
        side, default = torch.cuda.Stream(), torch.cuda.current_stream()
        with torch.cuda.stream(side):
            yield
        default.wait_stream(side)

    assert not _reads_what_the_default_stream_wrote(without_the_wait)
    assert _reads_what_the_default_stream_wrote(device_round.side_stream)

    entered, side_stream = [], device_round.side_stream  # per warm-up: whether it ran off the default stream

    @contextmanager
    def watched():
        with side_stream():
            entered.append(torch.cuda.current_stream() != torch.cuda.default_stream())
            yield

    monkeypatch.setattr(device_round, "side_stream", watched)
    pair = tiny_random_pair(3, device="cuda")
    options = dict(budget=10, verify="sampled", temperature=0.9, seed=4, record=False)
    eager = Session(pair, PROMPTS, cuda_graphs=False, **options).run(8, stop_on_eos=False)
    graphed = Session(pair, PROMPTS, cuda_graphs=True, **options).run(8, stop_on_eos=False)
    assert entered == [True]  # the warm-up, once, off the default stream; the captured rounds replay graphs
    assert [g.tokens for g in graphed] == [g.tokens for g in eager]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU tensors through Triton's interpreter (CPU machines only)")
def test_packed_mask_attention_drives_the_model_with_the_backends_reading(pair):
    """A whole forward through the workbench's Triton kernel reading the packed flat mask: the padded packing gives
    the reference logits, the unpadded one changes exactly the requests check_verify_batch flags."""
    from ddtree.engine import packed_mask_attention
    from verify_rounds import PROMPT_LENS, Q, prefilled_decoder, round_inputs

    dec = prefilled_decoder(pair)
    trees, ids, pos, parents = round_inputs(pair, seed=1)
    want = dec.clone().forward(ids, pos, parents)[0]
    for layout in ("padded", "unpadded"):
        batch = ddtree.pack_verify_batch(trees, list(PROMPT_LENS), Q, layout=layout)
        flagged = {c.request for c in ddtree.check_verify_batch(batch)}
        twin = dec.clone()
        twin.attention = packed_mask_attention(batch)
        got = twin.forward(ids, pos, parents)[0]
        for b, t in enumerate(trees):
            same = torch.allclose(got[b, :t.n_nodes], want[b, :t.n_nodes], atol=1e-4, rtol=1e-4)
            assert same == (b not in flagged), (layout, b)
        assert flagged == (set() if layout == "padded" else {2})
