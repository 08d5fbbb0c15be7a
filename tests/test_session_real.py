"""The real embedded SmolLM2 target with a random drafter: acceptance is poor, correctness is what is tested."""
import pytest

from ddtree import Session, check_lossless
from ddtree.models import load_pair, load_target, random_drafter_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair():
    model, tokenizer = load_target()
    return load_pair((model, tokenizer), random_drafter_for(model, seed=0))


def test_ddtree_and_dflash_are_lossless_on_smollm2(pair):
    prompts = ["Write a Python function that reverses a string.", "What is the capital of France?"]
    report = check_lossless(pair, prompts, 24, budget=16)
    assert report.ok, str(report)
    assert report.tokens_checked == 2 * 2 * 24


def test_sampled_session_on_smollm2_commits_real_text(pair):
    gen = Session(pair, "Name three colours.", verify="sampled", temperature=0.7, budget=16, seed=1).run(16)[0]
    assert len(gen.tokens) == 16 or gen.stopped == "eos"
    assert gen.text.strip() and all(r.requests[0].acceptance_length >= 1 for r in gen.records)
