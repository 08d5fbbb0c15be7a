"""What a run returns: one Generation per request (tokens, text, records, acceptance, speed)."""
from __future__ import annotations

from dataclasses import dataclass

from ddtree.record import RoundRecord
from ddtree.settings import STAGES


@dataclass
class Generation:
    text: str  # decoded generated tokens
    tokens: list[int]  # generated tokens (prompt excluded)
    records: list[RoundRecord]  # the run's rounds (shared by the requests of a batch)
    acceptance_lengths: list[int]  # tokens committed per target forward, one per round
    stage_times: dict[str, float]  # seconds per stage, summed over rounds (prefill included under "prefill")
    tokens_per_second: float  # generated tokens / decoding wall time (prefill excluded)
    stopped: str = "max_new_tokens"  # why it stopped: "max_new_tokens", "eos" or "context"

    @property
    def mean_acceptance_length(self) -> float:
        return sum(self.acceptance_lengths) / max(len(self.acceptance_lengths), 1)


def eos_index(tokens: list[int], eos: set[int]) -> int | None:
    return next((i for i, t in enumerate(tokens) if t in eos), None)


def make_generation(pair, generated, records, acceptance_lengths, prefill_s, wall, max_new_tokens, stop_on_eos,
                    stopped) -> Generation:
    """A request's Generation: its tokens cut at max_new_tokens (and after EOS when stop_on_eos)."""
    tokens = generated[:max_new_tokens]
    eos = eos_index(tokens, pair.eos_token_ids)
    if stop_on_eos and eos is not None:
        tokens, stopped = tokens[:eos + 1], "eos"
    totals = {"prefill": prefill_s}
    for stage in STAGES:
        totals[stage] = sum(r.times[stage] for r in records)
    return Generation(
        text=pair.decode(tokens), tokens=tokens, records=records,
        acceptance_lengths=acceptance_lengths, stage_times=totals,
        tokens_per_second=len(tokens) / wall if wall > 0 else float("inf"), stopped=stopped)
