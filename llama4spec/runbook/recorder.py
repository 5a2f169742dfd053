"""The one writer of a run directory's records, for the executor, the launchers and ``report``.

    runbook.yaml  plan.json  status.json  summary.md  environment.json  host.json  <step>/config.yaml

Every file is written whole, through a temporary file renamed into place (a reader never sees half
a record, a crash never leaves one), and redacted of the run's secrets. A one-step command keeps
no records: it runs with ``NoRecords``, whose writes do nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable

from llama4spec.engine.secrets import redact, redact_yaml
from llama4spec.files import Expect, Unreadable, json_text, plain, read_text, write_atomic
from llama4spec.runbook.rundir import STATUS, summary_markdown

RUNBOOK_COPY = Expect("runbook", "it is not the runbook this tool recorded", 1 << 20)


def checker(name: str) -> Callable[[Any, str], Any] | None:
    """The model check of the run directory's record ``name`` (None for a file without one)."""
    from llama4spec.records import host, plan, status

    return {"plan.json": plan.checked, STATUS: status.checked, "host.json": host.host_checked,
            "environment.json": host.environment_checked}.get(name)


class Recorder:
    """Writes the records of the run directory ``run_dir``, each redacted of ``secrets``."""

    keeps = True

    def __init__(self, run_dir: Path, secrets: Iterable[str] = ()):
        self.dir = Path(run_dir)
        self.secrets = list(secrets)

    def redact(self, obj: Any) -> Any:
        return redact(obj, self.secrets)

    def json(self, name: str, data: Any) -> None:
        """``name`` (environment.json, host.json, ...) in the run directory, checked first through its
        record's model (``checker``) as it will be read back: the same bytes as ever, never a record
        its reader would refuse."""
        text = json_text(self.redact(data))
        check = checker(name)
        if check is not None:
            check(json.loads(text), plain(str(self.dir / name)))
        write_atomic(self.dir / name, text + "\n")

    def start(self, plan: Any, source: str) -> None:
        """runbook.yaml (the runbook's text as given) and plan.json (every step's commands)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.dir / "runbook.yaml", redact_yaml(source, self.secrets))
        self.json("plan.json", plan.to_record(self.secrets))

    def copy_start(self, source_dir: Path, plan_record: Any) -> None:
        """runbook.yaml and plan.json as another run directory has them (a merged run's)."""
        self.json("plan.json", plan_record)
        try:
            text = read_text(Path(source_dir) / "runbook.yaml", RUNBOOK_COPY)
        except Unreadable:
            return  # none, or not one this tool wrote: the merged run keeps its plan.json only
        write_atomic(self.dir / "runbook.yaml", self.redact(text))

    def status(self, status: dict[str, Any], description: str = "", notes: Iterable[str] = ()) -> None:
        """status.json and summary.md (the same for people, then ``notes`` as its last lines)."""
        self.json(STATUS, status)
        text = summary_markdown(status, description)  # redacted once, below
        notes = list(notes)
        if notes:
            text += "\n" + "\n".join(notes) + "\n"
        write_atomic(self.dir / "summary.md", self.redact(text))

    def config(self, path: Path, text: str) -> None:
        """A step's config.yaml."""
        write_atomic(Path(path), text)


class NoRecords(Recorder):
    """A one-step command's recorder: no run directory records (its own artifacts are its output)."""

    keeps = False

    def __init__(self) -> None:
        super().__init__(Path("."))

    def json(self, name: str, data: Any) -> None:
        pass

    def start(self, plan: Any, source: str) -> None:
        pass

    def status(self, status: dict[str, Any], description: str = "", notes: Iterable[str] = ()) -> None:
        pass

    def config(self, path: Path, text: str) -> None:
        pass
