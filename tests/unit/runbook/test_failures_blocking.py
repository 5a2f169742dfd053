"""Which steps a failure blocks (runbook.failures.blocked_by): pure, no engine, no composing."""

from __future__ import annotations

from pathlib import Path

import pytest

from llama4spec.runbook.failures import blocked_by
from llama4spec.runbook.plan import PlannedStep
from llama4spec.runbook.steps import make as make_step


def _planned(sid: str, kind: str, needs: tuple[str, ...] = (), **fields) -> PlannedStep:
    return PlannedStep(step=make_step(kind, sid, needs=list(needs), **fields), needs=list(needs), run_dir=Path("."))


# Two sweep groups as runbook.matrix lays them out, then the sweep's report and a compare step.
STEPS = [
    _planned("a", "serve"),
    _planned("a-c1", "bench", ("a",), server="a"),
    _planned("a-c4", "bench", ("a",), server="a"),
    _planned("a-stop", "stop", ("a",), server="a"),
    _planned("b", "serve", ("a-stop",)),
    _planned("b-c1", "bench", ("b",), server="b"),
    _planned("b-c4", "bench", ("b",), server="b"),
    _planned("b-stop", "stop", ("b",), server="b"),
    _planned("sweep", "sweep", ("a-c1", "a-c4", "b-c1", "b-c4")),
    _planned("cmp", "compare", ("a-c4", "b-c4"), baseline="a-c4", candidate="b-c4"),
    _planned("offline", "offline", ("b-c1",)),
]
KINDS = {p.id: p.kind for p in STEPS}
BY_ID = {p.id: p for p in STEPS}


def _why(sid: str, **statuses: dict) -> str | None:
    return blocked_by(BY_ID[sid], {k.replace("_", "-"): v for k, v in statuses.items()}, KINDS)


FAILED, DONE = {"status": "failed", "error": "exited during start-up"}, {"status": "done"}


def test_a_failed_server_skips_its_benches_and_its_stop() -> None:
    assert _why("a-c1", a=FAILED) == "server 'a' failed"
    assert _why("a-c4", a=FAILED) == "server 'a' failed"
    assert _why("a-stop", a=FAILED) == "server 'a' failed"


def test_the_next_group_runs_after_a_skipped_stop() -> None:
    """The order between server groups is sequencing (they share a port), not dependency."""
    skipped_stop = {"status": "skipped", "reason": "server 'a' failed"}
    assert _why("b", a=FAILED, a_stop=skipped_stop) is None
    assert _why("b-c1", a=FAILED, a_stop=skipped_stop, b=DONE) is None


def test_a_skipped_server_skips_its_benches_naming_why() -> None:
    skipped = {"status": "skipped", "reason": "step 'fetch' failed"}
    assert _why("b-c1", b=skipped) == "server 'b' was skipped (step 'fetch' failed)"
    assert _why("b-stop", b=skipped) == "server 'b' was skipped (step 'fetch' failed)"


def test_a_server_that_exited_skips_its_remaining_benches_and_stop() -> None:
    exited = {"status": "done", "exited": True}
    assert _why("a-c4", a=exited, a_c1={"status": "failed"}) == "server 'a' exited"
    assert _why("a-stop", a=exited) == "server 'a' exited"


def test_a_failed_bench_blocks_nothing_on_its_server() -> None:
    """A bench that fails while its server lives (a bad client flag): the other points still run."""
    assert _why("a-c4", a=DONE, a_c1={"status": "failed"}) is None
    assert _why("a-stop", a=DONE, a_c1={"status": "failed"}) is None


def test_reports_run_on_whatever_was_measured() -> None:
    assert _why("sweep", a=FAILED, a_c1={"status": "skipped"}, a_c4={"status": "skipped"}, b_c1=DONE) is None


def test_compare_is_skipped_when_a_side_has_no_result() -> None:
    assert _why("cmp", a_c4={"status": "skipped", "reason": "server 'a' failed"}, b_c4=DONE) == \
        "baseline 'a-c4' was skipped (server 'a' failed)"
    assert _why("cmp", a_c4=DONE, b_c4={"status": "failed"}) == "candidate 'b-c4' failed"
    assert _why("cmp", a_c4=DONE, b_c4=DONE) is None


def test_an_explicit_need_on_a_failed_or_skipped_step_blocks() -> None:
    assert _why("offline", b_c1={"status": "failed"}) == "step 'b-c1' failed"
    assert _why("offline", b_c1={"status": "skipped", "reason": "server 'b' failed"}) == \
        "step 'b-c1' was skipped (server 'b' failed)"
    assert _why("offline", b_c1=DONE) is None


@pytest.mark.parametrize("status", ["pending", "running", "done"])
def test_nothing_blocks_without_a_failure(status: str) -> None:
    statuses = {p.id: {"status": status} for p in STEPS}
    assert all(blocked_by(p, statuses, KINDS) is None for p in STEPS)


def test_a_bench_against_a_given_url_has_no_server_to_wait_for() -> None:
    url_bench = _planned("remote", "bench", url="http://127.0.0.1:1")
    assert blocked_by(url_bench, {}, {**KINDS, "remote": "bench"}) is None
