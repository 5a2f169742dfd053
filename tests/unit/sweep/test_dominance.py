"""A larger lookahead that cannot win is not started (sweep.dominance), and one that can is kept."""

from __future__ import annotations

from llama4spec.sweep.dominance import Measured, why_not

C1, C4 = ("bench.max_concurrency=1",), ("bench.max_concurrency=4",)


def _point(client, draft, k, tput, rates=(), length=1.0):
    drafts = 1000
    return Measured(client, draft, k, [tput * f for f in (0.99, 1.0, 1.01, 1.0)], drafts=drafts if draft else 0,
                    accepted_at=[int(drafts * r) for r in rates], acceptance_lengths=[length] * 4 if draft else [])


def test_a_lookahead_beaten_by_a_smaller_one_with_low_acceptance_is_not_started() -> None:
    # k=2 leads at 3.0x; k=3 reached only 1.1x and accepts 5% at its last position: k=5 can reach
    # at most about 1.1 * 1.35 * (1 + 2 * 0.06 / 1.6) (upper bounds with the between-start term), below k=2's lower bound
    points = [_point(C1, None, None, 100.0),
              _point(C1, "imperfect", 2, 300.0, (0.7, 0.4), 2.1),
              _point(C1, "imperfect", 3, 110.0, (0.7, 0.4, 0.05), 1.6)]
    why = why_not("imperfect", 5, points)
    assert why is not None and why.startswith("k=5 not measured: its bound ")
    assert "below k=2's lower bound" in why and "at every concurrency" in why


def test_a_lookahead_whose_bound_reaches_the_leader_is_kept() -> None:
    # the perfect draft: every position accepted, so k=5 may reach (1 + 2 / 4) times k=3's 2.9x
    points = [_point(C1, None, None, 100.0),
              _point(C1, "perfect", 1, 180.0, (1.0,), 2.0),
              _point(C1, "perfect", 3, 290.0, (1.0, 1.0, 1.0), 4.0)]
    assert why_not("perfect", 5, points) is None


def test_it_must_be_beaten_at_every_measured_concurrency() -> None:
    beaten = [_point(C1, None, None, 100.0), _point(C1, "d", 2, 300.0, (0.7, 0.4), 2.1),
              _point(C1, "d", 3, 110.0, (0.7, 0.4, 0.05), 1.6)]
    kept = [_point(C4, None, None, 300.0), _point(C4, "d", 2, 330.0, (0.7, 0.4), 2.1),
            _point(C4, "d", 3, 360.0, (0.7, 0.4, 0.3), 2.0)]
    assert why_not("d", 5, beaten) is not None
    assert why_not("d", 5, beaten + kept) is None


def test_nothing_measured_of_the_draft_or_no_baseline_keeps_it() -> None:
    assert why_not("d", 3, [_point(C1, None, None, 100.0)]) is None
    assert why_not("d", 3, [_point(C1, "d", 1, 200.0, (0.5,), 1.5)]) is None
