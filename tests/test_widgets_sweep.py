"""ddtree.sweep (plain rows) and SweepView on a tiny random pair."""
import pytest

from ddtree.sweep import best_budget, summarize, sweep
from ddtree.widgets import SweepView
from ddtree.widgets.figures import sweep_figure


@pytest.fixture(scope="module")
def pair():
    from ddtree.models import tiny_random_pair
    return tiny_random_pair(0)


@pytest.fixture(scope="module")
def rows(pair):
    return sweep(pair, ["one", "two"], [2, 8], temperatures=(0.0, 1.0), max_new_tokens=6, progress=False)


def test_sweep_rows(rows):
    assert len(rows) == 2 * 2 + 2 * 2 * 2  # baselines per prompt and temperature, then every setting
    ar = [r for r in rows if r["method"] == "ar"]
    assert len(ar) == 4 and all(r["budget"] == 0 and r["acceptance_length"] == 1.0 for r in ar)
    for r in rows:
        assert r["tokens"] == 6 and r["rounds"] >= 1 and r["tokens_per_second"] > 0
        assert r["acceptance_length"] == pytest.approx(r["tokens"] / r["rounds"], rel=0.5)
        assert {"ms_draft", "ms_verify", "ms_walk"} <= set(r)


def test_summarize_and_best_budget(rows):
    summary = summarize(rows)
    assert len(summary) == 2 + 4  # (ar, T) x 2 and (ddtree, budget, T) x 4
    for s in summary:
        group = [r for r in rows if (r["method"], r["budget"], r["temperature"]) ==
                 (s["method"], s["budget"], s["temperature"])]
        assert s["prompts"] == 2
        assert s["tokens_per_second"] == pytest.approx(sum(r["tokens_per_second"] for r in group) / 2)
        ar = next(a for a in summary if a["method"] == "ar" and a["temperature"] == s["temperature"])
        assert s["speedup"] == pytest.approx(s["tokens_per_second"] / ar["tokens_per_second"])
    for t in (0.0, 1.0):
        fastest = max((s for s in summary if s["method"] == "ddtree" and s["temperature"] == t),
                      key=lambda s: s["tokens_per_second"])
        assert best_budget(rows, temperature=t) == fastest["budget"]
    with pytest.raises(ValueError, match="temperature"):
        best_budget(rows, temperature=0.5)
    with pytest.raises(ValueError, match="by"):
        best_budget(rows, by="colour")


def test_auto_runs_beside_the_fixed_budgets_on_one_cost_table(pair, monkeypatch):
    import ddtree.sweep
    seen = []
    real = ddtree.sweep.Session

    def session(*args, **kwargs):
        seen.append(kwargs.get("budget_costs"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ddtree.sweep, "Session", session)
    rows = sweep(pair, ["one", "two"], [8, "auto"], max_new_tokens=6, progress=False)
    auto = [r for r in rows if r["budget"] == "auto"]
    assert len(auto) == 2 and all(0 <= r["mean_budget"] <= 256 and r["tokens"] == 6 for r in auto)
    assert "mean_budget" not in rows[0]
    costs = [c for c in seen if c is not None]  # the warm-up measured the table; both auto runs reuse it
    assert seen[0] is None and len(costs) == 2 and costs[0] is costs[1]
    summary = summarize(rows)
    assert [r["budget"] for r in summary] == [0, 8, "auto"]  # ints in order, then auto
    assert best_budget(rows) in (8, "auto")
    fig = sweep_figure(summary, best={0.0: "auto"})
    level = [t for t in fig.data if t.name == "ddtree auto T=0"]
    assert [list(t.x) for t in level if t.mode == "lines"] == [[8, 8], [8, 8]]  # across the fixed budgets
    diamonds = [t for t in level if t.mode == "markers"]
    assert len(diamonds) == 2 and diamonds[0].x[0] == pytest.approx(summary[2]["mean_budget"])
    assert any(t.name == "best budget (ddtree auto T=0)" for t in fig.data)
    assert "mean budget" in SweepView(rows).table.value
    only_auto = sweep_figure([r for r in summary if r["budget"] != 8])  # the baseline spans auto's mean budget
    assert list(next(t for t in only_auto.data if t.name == "ar T=0").x) == [summary[2]["mean_budget"]] * 2
    with pytest.raises(ValueError, match="'auto' with method 'ddtree'"):
        sweep(pair, "p", ["auto"], method="dflash")


def test_sweep_rejects_bad_arguments(pair):
    with pytest.raises(ValueError, match="budgets"):
        sweep(pair, "p", [0])
    with pytest.raises(ValueError, match="prompts"):
        sweep(pair, [], [4])
    with pytest.raises(ValueError, match="method"):
        sweep(pair, "p", [4], method="ar")
    with pytest.raises(ValueError, match="temperatures"):
        sweep(pair, "p", [4], temperatures=(-1.0,))


def test_sweep_figure_and_view(rows):
    summary = summarize(rows)
    fig = sweep_figure(summary)
    names = {t.name for t in fig.data}
    assert names == {"ar T=0", "ar T=1", "ddtree T=0", "ddtree T=1"}
    ddtree_greedy = [t for t in fig.data if t.name == "ddtree T=0"]
    assert [list(t.x) for t in ddtree_greedy] == [[2, 8], [2, 8]]  # acceptance and tokens/s panels
    view = SweepView(rows)
    assert len(view.slot.figure.data) == len(fig.data)
    best = best_budget(rows)
    assert f"T=0: budget {best}" in view.table.value and view.table.value.count("font-weight:bold") == 2
    with pytest.raises(ValueError, match="rows"):
        view.show([])
