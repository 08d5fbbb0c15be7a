"""Bit-exact mode: every verify row computes the bits of an autoregressive step, so speculative greedy output and the
target's logits at accepted nodes equal autoregressive ones bit for bit (ddtree.kernels.matmul,
ddtree.kernels.tree_attention_exact, NativeDecoder(exact=True), Session(exact=True)). On a CPU the kernels run in
Triton's interpreter, float32 and bfloat16; the negative controls show that the same comparisons catch a changed
reduction order."""
import pytest
import torch

import ddtree.kernels.matmul as matmul
from ddtree import Session
from ddtree.engine import NativeDecoder
from ddtree.kernels.tree_attention import (tree_attention, tree_attention_exact, tree_attention_ref, visible_columns,
                                           visible_from_parents)
from ddtree.lossless import TIE_ULPS, Divergence, check_lossless, committed_logits, ulps
from ddtree.models import load_pair, tiny_random_pair
from ddtree.tree import ancestor_bits, bits_visible

DTYPES = [torch.float32, torch.bfloat16]
PROMPTS = ["first prompt", "a second, longer prompt here"]


def tiny_pair(dtype):
    pair = tiny_random_pair(1)
    return load_pair((pair.target.to(dtype), pair.tokenizer), pair.drafter)


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_rows_do_not_depend_on_the_row_count(dtype):
    g = torch.Generator().manual_seed(0)
    x, w, b = (torch.randn(*shape, generator=g).to(dtype) for shape in ((70, 80), (100, 80), (100,)))
    full = matmul.linear(x, w, b)  # [70, 100]: two row tiles, two K steps
    torch.testing.assert_close(full.double(), matmul.linear_ref(x, w, b), atol=0.3 if dtype == torch.bfloat16
                               else 1e-4, rtol=1e-2)
    for rows in (slice(0, 1), slice(37, 38), slice(63, 70), slice(5, 66)):
        assert torch.equal(matmul.linear(x[rows], w, b), full[rows])
    assert torch.equal(matmul.linear(x.view(7, 10, 80), w, b), full.view(7, 10, 100))  # leading dims flattened
    if dtype == torch.float32:  # negative control (float32 output keeps the accumulator's bits): the same sums
        split = matmul.linear(x[:, :40], w[:, :40], b) + matmul.linear(x[:, 40:], w[:, 40:])  # in another order
        torch.testing.assert_close(split, full)
        assert not torch.equal(split, full)


def test_linear_refuses_bad_input():
    w = torch.randn(4, 3)
    with pytest.raises(ValueError, match=r"x must be a floating tensor \[..., 3\]"):
        matmul.linear(torch.randn(2, 5), w)
    with pytest.raises(ValueError, match="share a dtype"):
        matmul.linear(torch.randn(2, 3, dtype=torch.float64), w)
    with pytest.raises(ValueError, match=r"bias must be \[4\]"):
        matmul.linear(torch.randn(2, 3), w, torch.randn(3))


def _ar_cache_row(k, v, b, seq_len, path, length):
    """The cache an autoregressive decode would hold for row `path[-1]`: the prefix, then the path contiguous."""
    k2, v2 = (torch.zeros(1, k.shape[1], length, k.shape[3], dtype=k.dtype) for _ in range(2))
    k2[0, :, :seq_len], v2[0, :, :seq_len] = k[b, :, :seq_len], v[b, :, :seq_len]
    for t, j in enumerate(path):
        k2[0, :, seq_len + t], v2[0, :, seq_len + t] = k[b, :, seq_len + j], v[b, :, seq_len + j]
    return k2, v2


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_attention_tree_rows_equal_autoregressive_rows(dtype):
    """Each tree row (ancestors at scattered cache rows; padding rows; two requests) has exactly the bits of a
    one-row autoregressive call over the same keys laid out contiguously; a chain request gives the same bits through
    the chain path; the values match the float64 oracle."""
    g = torch.Generator().manual_seed(0)
    batch, rows, length = 2, 9, 200
    seq_lens = torch.tensor([70, 127])  # a prefix block boundary inside the tree rows for request 1
    parents = torch.tensor([[-1, 0, 0, 1, 1, 3, 2, -1, -1], [-1, 0, 1, 2, 3, 4, 5, 6, 7]])
    q = torch.randn(batch, rows, 4, 16, generator=g).to(dtype)
    k, v = (torch.randn(batch, 2, length, 16, generator=g).to(dtype) for _ in range(2))
    visible = bits_visible(ancestor_bits(parents), rows)
    assert torch.equal(visible, visible_from_parents(parents))
    counts, columns = visible_columns(visible)
    out = tree_attention_exact(q, k, v, seq_lens, counts, columns)
    ref = tree_attention_ref(q, k, v, seq_lens, torch.full((batch,), rows), visible)
    torch.testing.assert_close(out.double(), ref, atol=2e-2 if dtype == torch.bfloat16 else 1e-5, rtol=0)
    assert torch.equal(tree_attention_exact(q[1:], k[1:], v[1:], seq_lens[1:]), out[1:])  # the chain path
    fast = tree_attention(q, k, v, seq_lens, ancestor_bits(parents))
    fast_differs = False
    for b in range(batch):
        for i in range(rows):
            path = visible[b, i].nonzero().flatten().tolist()
            s = int(seq_lens[b])
            k2, v2 = _ar_cache_row(k, v, b, s, path, length)
            ar = tree_attention_exact(q[b:b + 1, i:i + 1], k2, v2, torch.tensor([s + len(path) - 1]))
            assert torch.equal(ar[0, 0], out[b, i]), (b, i)
            fast_differs |= not torch.equal(ar[0, 0], fast[b, i])
    assert fast_differs  # negative control: the fast kernel's reduction order gives other bits


def test_exact_attention_refuses_half_a_table():
    q, k = torch.zeros(1, 2, 2, 16), torch.zeros(1, 1, 8, 16)
    with pytest.raises(ValueError, match="counts and columns must both be given"):
        tree_attention_exact(q, k, k, torch.tensor([3]), counts=torch.ones(1, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="counts must be int32"):
        tree_attention_exact(q, k, k, torch.tensor([3]), torch.ones(1, 2), torch.zeros(1, 2, 2, dtype=torch.int32))


def _decode_ar(target, prompts, steps):
    """Greedy autoregressive decoding, one-row forwards of the batch -> per request (tokens, logits rows)."""
    dec = NativeDecoder(target, batch_size=len(prompts), max_len=64, exact=True)
    tokens, logits = [], [[] for _ in prompts]
    for b, prompt in enumerate(prompts):
        pos = torch.arange(len(prompt))
        last = dec.forward(torch.tensor([prompt]), pos[None], (pos - 1)[None], request=b)[0][0, -1]
        dec.commit(pos[None], torch.tensor([len(prompt)]), request=b)
        tokens.append([int(last.argmax())])
    for _ in range(steps):
        ids = torch.tensor([[t[-1]] for t in tokens])
        out = dec.forward(ids, dec.seq_lens[:, None].clone(), torch.full((len(prompts), 1), -1))[0][:, 0]
        dec.commit(torch.zeros(len(prompts), 1, dtype=torch.long), torch.ones(len(prompts), dtype=torch.long))
        for b, row in enumerate(out):
            logits[b].append(row)
            tokens[b].append(int(row.argmax()))
    return tokens, logits


def _tree_with_path(path_tokens, rows, vocab, g):
    """A random tree whose node 0 .. carry `path_tokens` at depths 0.. (scattered node indices), other nodes random,
    then padding rows (parent -1) -> (tokens, parents, depths, path node indices)."""
    n_nodes = rows - 2
    parents, depths, tokens, path = [-1], [0], [path_tokens[0]], [0]
    for i in range(1, n_nodes):
        on_path = len(path) < len(path_tokens) and (torch.rand(1, generator=g) < 0.5 or n_nodes - i
                                                    <= len(path_tokens) - len(path))
        parent = path[-1] if on_path else int(torch.randint(0, i, (1,), generator=g))
        parents.append(parent)
        depths.append(depths[parent] + 1)
        tokens.append(path_tokens[len(path)] if on_path else int(torch.randint(0, vocab, (1,), generator=g)))
        if on_path:
            path.append(i)
    pad = rows - n_nodes
    return tokens + [path_tokens[0]] * pad, parents + [-1] * pad, depths + [0] * pad, path


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_tree_verify_logits_equal_autoregressive_logits(dtype):
    """Two rounds of padded tree verify forwards of a batch of two, whose trees hold the autoregressive greedy path
    at scattered nodes among random ones: the logits at every path node equal the autoregressive step's logits
    bitwise, the second round over a prefix that the first round's compaction wrote."""
    target = tiny_pair(dtype).target
    prompts = [[5, 9, 13, 2, 7], [3] * 11]
    ar_tokens, ar_logits = _decode_ar(target, prompts, 6)
    dec = NativeDecoder(target, batch_size=2, max_len=64, exact=True)
    for b, prompt in enumerate(prompts):
        pos = torch.arange(len(prompt))
        dec.forward(torch.tensor([prompt]), pos[None], (pos - 1)[None], request=b)
        dec.commit(pos[None], torch.tensor([len(prompt)]), request=b)
    g, done = torch.Generator().manual_seed(3), 0
    for depth in (4, 2):  # round 1 accepts 4 tokens, round 2 two
        trees = [_tree_with_path(t[done:done + depth], 12, target.config.vocab_size, g) for t in ar_tokens]
        ids, parents, depths = (torch.tensor([t[k] for t in trees]) for k in range(3))
        logits = dec.forward(ids, dec.seq_lens[:, None] + depths, parents)[0]  # [2, 12, V]
        for b, (*_, path) in enumerate(trees):
            for d, node in enumerate(path):
                assert torch.equal(logits[b, node], ar_logits[b][done + d]), (dtype, b, done + d)
        accepted = torch.full((2, 12), -1)
        for b, (*_, path) in enumerate(trees):
            accepted[b, :depth] = torch.tensor(path)
        dec.commit(accepted, torch.full((2,), depth))
        done += depth


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_sessions_equal_autoregressive_greedy_bit_for_bit(dtype):
    """Session(exact=True): DDTree (per-request budgets, padded rows) and DFlash greedy output and the logits of
    every committed position equal autoregressive greedy ones bitwise, and a request's rows do not depend on the
    batch it decodes in."""
    pair = tiny_pair(dtype)
    rows = 5
    options = dict(backend="native", exact=True)
    ar = Session(pair, PROMPTS, method="ar", **options)
    ar_logits = committed_logits(ar, rows)
    for method, budget in (("ddtree", (3, 9)), ("dflash", 1)):
        s = Session(pair, PROMPTS, method=method, budget=budget, **options)
        got = committed_logits(s, rows)
        assert [g[:rows + 1] for g in s.generated] == [g[:rows + 1] for g in ar.generated]
        assert all(torch.equal(a, b) for a, b in zip(ar_logits, got)), method
    alone = committed_logits(Session(pair, PROMPTS[1], method="ar", **options), rows)[0]
    assert torch.equal(alone, ar_logits[1])


def test_exact_mode_keeps_a_corrupted_flat_mask_corrupted():
    """With the serving engine's flat mask (attention="custom_mask"), exact mode reads the bits the kernel reads:
    padded packing decodes as autoregressive, bit for bit; unpadded packing still corrupts the requests after the
    small tree (a real bug is not hidden)."""
    pair = tiny_pair(torch.float32)
    prompts = ["first prompt", "a second, longer prompt here", "3"]
    options = dict(backend="native", exact=True, budget=[2, 9, 9], attention="custom_mask")
    ar = committed_logits(Session(pair, prompts, method="ar", backend="native", exact=True), 1)
    rounds = []
    for layout in ("padded", "unpadded"):
        session = Session(pair, prompts, mask_layout=layout, **options)
        session.step()
        rounds.append(session.backend.last_round.verified.logits)  # [3, Q, V]: every tree row
    padded, corrupted = rounds
    assert all(torch.equal(ar[b][0], padded[b, 0]) for b in range(3))  # the roots: autoregressive bits
    assert torch.equal(padded[0, :3], corrupted[0, :3])  # the first request's 3 nodes read their own block
    assert not torch.equal(padded[1:], corrupted[1:])  # the later ones read shifted bits, in exact mode too


def test_exact_mode_refuses_what_it_cannot_keep():
    pair = tiny_random_pair(1)
    with pytest.raises(ValueError, match="exact=True runs Triton attention"):
        Session(pair, "x", backend="native", exact=True, attention="torch")
    with pytest.raises(ValueError, match="exact=True runs the fused forward"):
        Session(pair, "x", backend="native", exact=True, fused=False)
    with pytest.raises(ValueError, match="apply to backend='native' only"):
        Session(pair, "x", backend="reference", exact=True)
    with pytest.raises(ValueError, match="exact must be True, False or 'auto'"):
        check_lossless(pair, ["x"], 2, exact="yes")


def test_divergence_triage_in_ulps(monkeypatch):
    """A top-2 margin is measured in ulps of the dtype at the top-1 logit: within TIE_ULPS a tie, else a bug."""
    assert ulps(2.0 ** -4, 10.0, torch.bfloat16) == 1.0  # bf16 ulp at 10.0 (8 <= x < 16) is 2^-4
    assert ulps(2.0 ** -20, 10.0, torch.float32) == 1.0  # float32 ulp there is 2^-20
    assert ulps(0.5, -3.0, torch.bfloat16) == 32.0  # 2^-6 at |x| in [2, 4)
    tie = Divergence(0, "ddtree", 7, 11, 12, 0.0625, 1.0, exact_rerun=-1)
    bug = Divergence(1, "dflash", 3, 11, 12, 2.5, 40.0, exact_rerun=3)
    assert tie.tie and not bug.tie and TIE_ULPS >= 1
    assert "a precision tie" in str(tie) and "exact-mode rerun identical" in str(tie)
    assert "a real bug" in str(bug) and "still diverges at token 3" in str(bug)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="exact=True needs the native engine's Triton kernels"):
        check_lossless(tiny_random_pair(1), ["x"], 2, exact=True)


def test_check_lossless_reruns_a_divergence_in_exact_mode(monkeypatch):
    """A divergence in the fast run (here planted: the fast DDTree and DFlash outputs get token 2 changed) is decoded
    again in exact mode, where it disappears; the prompt's exact autoregressive output is decoded once for both."""
    import ddtree.lossless as lossless
    real, calls = lossless._greedy, []

    def greedy(pair, prompt, method, budget, chat, max_new_tokens, **backend):
        calls.append((method, backend.get("exact", False)))
        tokens = real(pair, prompt, method, budget, chat, max_new_tokens, **backend)
        return tokens if backend.get("exact") else tokens[:2] + [tokens[2] + 1] + tokens[3:]

    monkeypatch.setattr(lossless, "_greedy", greedy)
    report = check_lossless(tiny_random_pair(1), ["first prompt"], 4, budget=6, exact=True)
    assert not report.ok and [(d.method, d.position, d.exact_rerun) for d in report.divergences] == [
        ("ddtree", 2, -1), ("dflash", 2, -1)]
    assert calls.count(("ar", True)) == 1 and "exact-mode rerun identical" in str(report)


@pytest.mark.gpu
def test_exact_mode_on_gpu_with_cuda_graphs():
    """On the GPU (tensor-core tiles): the same bit-for-bit equality, replayed from CUDA graphs, and graphs change
    nothing."""
    pair = tiny_random_pair(1, device="cuda")
    pair = load_pair((pair.target.to(torch.bfloat16), pair.tokenizer), pair.drafter)
    options = dict(backend="native", exact=True, cuda_graphs=True)
    ar = committed_logits(Session(pair, PROMPTS, method="ar", **options), 24)
    for method, budget in (("ddtree", (3, 40)), ("dflash", 1)):
        got = committed_logits(Session(pair, PROMPTS, method=method, budget=budget, **options), 24)
        assert all(torch.equal(a, b) for a, b in zip(ar, got)), method
    eager = committed_logits(Session(pair, PROMPTS, method="ddtree", budget=(3, 40), backend="native", exact=True,
                                                  cuda_graphs=False), 24)
    assert all(torch.equal(a, b) for a, b in zip(ar, eager))


@pytest.mark.gpu
@pytest.mark.slow
def test_exact_mode_on_the_embedded_pair_on_gpu():
    """The shipped pair in bfloat16: DDTree-128 and DFlash greedy equal autoregressive greedy bit for bit."""
    from ddtree.models import load_default_pair
    pair = load_default_pair(device="cuda")
    prompts = ["Write a Python function that reverses a list.", "Give me three tips for better sleep."]
    options = dict(backend="native", exact=True, cuda_graphs=True)
    ar = committed_logits(Session(pair, prompts, method="ar", **options), 64)
    for method in ("ddtree", "dflash"):
        got = committed_logits(Session(pair, prompts, method=method, budget=128, **options), 64)
        assert all(torch.equal(a, b) for a, b in zip(ar, got)), method
