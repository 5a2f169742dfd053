"""What a run says about itself (a renderer): as a recorded run of a runbook (``RunOutput``), or as
one command (``CommandOutput``: ``serve``, ``bench``, ``offline``, ``fetch``). The executor and the
steps call these; neither asks which one it has."""

from __future__ import annotations

from typing import Any

from rich.markup import escape


class RunOutput:
    """A recorded run: every step numbered, where the records are, a step's results as progress lines."""

    indent = "      "  # a step's own lines, under its numbered heading

    def numbered(self, total: int) -> bool:
        return True

    def opened(self, run: Any) -> None:
        run.console.print(f"run record: [bold]{escape(run.redact(str(run.dir)))}[/bold]")

    def closed(self, run: Any) -> None:
        say_verdicts(run)
        run.console.print(f"summary: [bold]{escape(run.redact(str(run.dir / 'summary.md')))}[/bold]")

    def result(self, run: Any, text: str) -> None:
        """A step's result line (a server's url): part of the progress (-q hides it)."""
        run.progress.note(text)

    def bench(self, run: Any, record: Any, files: Any) -> None:
        """A benchmark's figures: in the run's status and summary, not printed one by one."""

    def input_error(self, err: Exception) -> None:
        """Bad input found while a step ran: that step's failure (the run goes on)."""


def say_verdicts(run: Any) -> None:
    """The verdicts the steps' results state (``rundir.step_verdicts``), one line each, as text."""
    from llama4spec.runbook.rundir import step_verdicts

    for sid, line in step_verdicts([{"id": k, **v} for k, v in run.entries.items() if isinstance(v, dict)]):
        run.console.print(run.redact(f"{sid}: {line}"), markup=False, highlight=False, soft_wrap=True)


class CommandOutput(RunOutput):
    """One command: its step's results are what it prints (even with -q); no run directory records."""

    indent = ""

    def numbered(self, total: int) -> bool:
        return total > 1

    def opened(self, run: Any) -> None:
        pass

    def closed(self, run: Any) -> None:
        pass

    def result(self, run: Any, text: str) -> None:
        run.say(text)

    def bench(self, run: Any, record: Any, files: Any) -> None:
        from llama4spec.results.comparison import render_single

        render_single(run.console, record)
        run.say(f"record: {files.record}  vLLM result: {files.result}")

    def input_error(self, err: Exception) -> None:
        """The command's own error (exit 2)."""
        raise err
