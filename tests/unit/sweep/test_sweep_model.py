"""The speedup model against cases computed by hand, and the sweep analysis built on it."""

from __future__ import annotations

import pytest

from llama4spec.sweep import render as report
from llama4spec.sweep.model import (
    Point,
    analyse,
    recommend,
    efficiency,
    expected_tokens,
    speedup_bound,
)

RATES = (0.8, 0.6, 0.3)  # P(position 0, 1, 2 accepted)


def test_expected_tokens_per_verification_step() -> None:
    assert expected_tokens(RATES, 0) == 1.0
    assert expected_tokens(RATES, 1) == pytest.approx(1.8)
    assert expected_tokens(RATES, 2) == pytest.approx(2.4)
    assert expected_tokens(RATES, 3) == pytest.approx(2.7)
    with pytest.raises(ValueError, match="lookahead 4 needs 4 measured positions; 3 measured"):
        expected_tokens(RATES, 4)


def test_bound_is_the_mean_acceptance_length_and_efficiency_divides_by_it() -> None:
    assert speedup_bound(RATES) == pytest.approx(2.7)
    assert speedup_bound((1.0, 1.0, 1.0)) == 4.0  # the perfect pair at k=3: k+1
    assert efficiency(1.5, 2.7) == pytest.approx(0.5555556)
    assert efficiency(None, 2.7) is None and efficiency(1.5, None) is None


def _p(draft: str, k: int | None, c: int, tput: float, rates: tuple[float, ...] = ()) -> Point:
    acc = 1 + sum(rates) if k else None
    return Point(id=f"{draft}-k{k}-c{c}", draft=draft, lookahead=k, concurrency=c, output_throughput=tput,
                 mean_tpot_ms=1000 / tput, mean_ttft_ms=10.0, acceptance_length=acc, rates=rates,
                 num_drafts=100 if k else 0, accepted_per_pos=tuple(round(100 * r) for r in rates))


def test_analysis_picks_best_by_throughput_not_acceptance_and_finds_where_speculation_stops_paying() -> None:
    points = [
        _p("none", None, 1, 100.0), _p("eagle", 1, 1, 150.0, (0.8,)), _p("eagle", 3, 1, 160.0, RATES),
        _p("none", None, 4, 300.0), _p("eagle", 1, 4, 330.0, (0.8,)), _p("eagle", 3, 4, 310.0, RATES),
        _p("none", None, 16, 800.0), _p("eagle", 1, 16, 700.0, (0.8,)), _p("eagle", 3, 16, 500.0, RATES),
    ]
    a = analyse(points)
    assert [x.concurrency for x in a.at] == [1, 4, 16]
    c1, c4, c16 = a.at
    assert c1.best.lookahead == 3 and c4.best.lookahead == 1  # at 4, k=3 accepts more but k=1 is faster
    assert c4.best_by_acceptance.lookahead == 3
    assert c16.best.id == "none-kNone-c16"
    row = next(r for r in c1.rows if r.point.lookahead == 3)
    assert row.speedup == pytest.approx(1.6) and row.bound == pytest.approx(2.7)
    assert row.efficiency == pytest.approx(1.6 / 2.7)
    # c at concurrency 1: k=1: E/S-1 = 1.8/1.5-1 = 0.2; k=3: 2.7/1.6-1 = 0.6875 -> (0.2 + 3*0.6875) / 10
    fit = c1.fits["eagle"]
    assert fit.draft_cost == pytest.approx((0.2 + 3 * 0.6875) / 10)
    c = fit.draft_cost
    assert fit.rates == RATES and [k for k, _ in fit.curve] == [1, 2, 3]
    assert [s for _, s in fit.curve] == pytest.approx([1.8 / (1 + c), 2.4 / (1 + 2 * c), 2.7 / (1 + 3 * c)])
    assert fit.best == (2, pytest.approx(2.4 / (1 + 2 * c)))  # 1.652 beats 1.468 (k=1) and 1.608 (k=3)
    assert row.predicted == pytest.approx(2.7 / (1 + 3 * fit.draft_cost))
    assert a.pays_up_to == 4 and a.stops_paying_at == 16
    assert a.verdict() == ("speculation pays up to concurrency 4; from concurrency 16 on, "
                           "no lookahead beats no speculation (single samples: no interval)")


def test_a_speedup_above_its_bound_is_flagged_as_noise() -> None:
    from llama4spec.sweep.render import findings

    a = analyse([_p("none", None, 4, 100.0), _p("eagle", 1, 4, 210.0, (1.0,)), _p("eagle", 3, 4, 300.0, (1.0,) * 3)])
    lines = findings(a.at[0])
    assert [line.split(" measured")[0] for line in lines if "above its bound" in line] == ["eagle k=1"]
    assert any("efficiency 105%" in line for line in lines)


def test_verdicts_when_it_always_or_never_pays() -> None:
    always = analyse([_p("none", None, 1, 100.0), _p("eagle", 2, 1, 180.0, (0.9, 0.8))])
    assert always.stops_paying_at is None and "pays at every measured concurrency (up to 1)" in always.verdict()
    never = analyse([_p("none", None, 1, 100.0), _p("eagle", 2, 1, 90.0, (0.1, 0.0))])
    assert never.pays_up_to is None and never.verdict() == ("speculation does not pay at any measured concurrency "
                                                                     "(single samples: no interval)")
    alone = analyse([_p("eagle", 2, 1, 90.0, (0.1, 0.0))])
    assert alone.at[0].rows[0].speedup is None and alone.verdict().startswith("no speedup measured")


def test_points_of_a_prompt_category_are_analysed_per_category() -> None:
    from llama4spec.sweep import render as report

    def pt(cat: str, k: int | None, tput: float, rates: tuple[float, ...] = ()) -> Point:
        return Point(id=f"{cat}-{k}", draft="eagle" if k else "none", lookahead=k, concurrency=1,
                     output_throughput=tput, acceptance_length=1 + sum(rates) if k else None, rates=rates,
                     category=cat)

    points = [pt("coding", None, 100.0), pt("coding", 2, 180.0, (0.9, 0.8)),
              pt("writing", None, 100.0), pt("writing", 2, 120.0, (0.5, 0.2))]
    a = analyse(points)
    assert [(x.category, x.concurrency) for x in a.at] == [("coding", 1), ("writing", 1)]
    assert [r.speedup for x in a.at for r in x.rows] == pytest.approx([1.8, 1.2])  # each against its own baseline
    md = report.markdown(a)
    assert "### concurrency 1, category coding" in md and "## acceptance by category" in md
    table = md.split("## acceptance by category", 1)[1]
    assert "| writing |" in table and "| coding |" in table and "writing" in table.split("least", 1)[1]


def _runs(pid: str, k: int | None, concurrency: int, throughputs: tuple[float, ...]) -> Point:
    """A point measured three times: output throughput per run, the figure their median."""
    return Point(id=pid, draft="eagle" if k else "none", lookahead=k, concurrency=concurrency,
                 output_throughput=sorted(throughputs)[len(throughputs) // 2], samples={"output_throughput": throughputs})


def test_settings_compare_by_their_paired_speedups() -> None:
    """Run-to-run drift moves every setting's throughput together: the throughput intervals of no
    speculation and k=1 overlap, but each run of k=1 beats the same run of no speculation by 30%
    or so, so k=1 is recommended and no speculation does not tie with it."""
    base = _runs("none", None, 4, (280.0, 365.0, 440.0))
    k1 = _runs("k1", 1, 4, (370.0, 473.0, 560.0))
    k3 = _runs("k3", 3, 4, (300.0, 459.0, 620.0))
    assert base.interval("output_throughput").overlaps(k1.interval("output_throughput"))
    at = analyse([base, k1, k3]).at[0]
    assert at.best.id == "k1" and at.choices["eagle"].recommended == "k=1"
    pick, ch = recommend([k1, k3], base)
    assert pick.id == "k1" and ch.tied == ("k=1", "k=3")
    assert "recommended: no speculation" not in " ".join(report.findings(at))


def test_the_smallest_tied_lookahead_that_beats_no_speculation_is_recommended() -> None:
    """k=1, k=2 and k=3 tie by throughput; only k=2's paired speedup is above 1 with 95% confidence:
    k=2 is recommended. When no tied lookahead beats no speculation, no speculation is."""
    base = _runs("none", None, 1, (80.0, 100.0, 120.0))
    k1 = _runs("k1", 1, 1, (60.0, 110.0, 170.0))
    k2 = _runs("k2", 2, 1, (110.0, 130.0, 150.0))
    k3 = _runs("k3", 3, 1, (90.0, 140.0, 200.0))
    pick, ch = recommend([k1, k2, k3], base)
    assert ch.tied == ("k=1", "k=2", "k=3") and pick.id == "k2"
    at = analyse([base, k1, k2, k3]).at[0]
    assert at.best.id == "k2"
    assert ("best lookahead by output throughput: k=1, k=2 and k=3 tie (intervals overlap); recommended: k=2, the "
            "smallest of them that beats no speculation with 95% confidence") in report.findings(at)
    flat = _runs("k2", 2, 1, (70.0, 101.0, 140.0))
    pick, _ = recommend([k1, flat], base)
    assert pick.id == "none"
    assert any(f.endswith("recommended: no speculation (no lookahead beats it with 95% confidence)")
               for f in report.findings(analyse([base, k1, flat]).at[0]))
