"""host.json and environment.json: where a run ran. The executor writes both through these models
(``runbook.execute``: the versions, the host and the models' resolved commits; the allow-listed
environment variables); report.html, ``regress``, ``report`` (a merge's machines) and the launchers
(the node types of their groups) read them back through ``read_host`` / ``read_environment``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Union

from pydantic import ConfigDict, Field, RootModel

from llama4spec.records.base import MAX_TEXT, Record, validated
from llama4spec.records.plan import MAX_PATH, Env, Name, PathText, StepId
from llama4spec.records.registry import Entry, register

MAX_GPUS = 4_096
Version = Union[Annotated[str, Field(max_length=MAX_TEXT)], None]
Commit = Annotated[str, Field(max_length=MAX_TEXT, description=f"a commit of at most {MAX_TEXT} characters")]


class HostInfo(Record):
    """host.json's ``host`` (``results.provenance.host``)."""

    hostname: Union[Name, None] = None
    platform: Union[Name, None] = None
    cpu_count: Union[int, None] = Field(None, ge=0, le=1_000_000, description="a count from 0 to 1,000,000")
    gpus: Annotated[list[Name], Field(max_length=MAX_GPUS, description=(
        f"a list of at most {MAX_GPUS} GPUs (at most {MAX_TEXT} characters each)"))] = []
    cpu: Union[Name, None] = None
    memory_gib: Union[float, None] = Field(None, ge=0, le=1e9, description="GiB from 0 to 1e9")
    machine: Union[Name, None] = None

    def kind(self) -> str | None:
        """The node's type in words: its GPUs, else its CPU (None when it names neither)."""
        return ", ".join(self.gpus) or self.cpu or None


class ModelRevision(Record):
    """One model a step loads (``results.provenance.model_revisions``)."""

    model: PathText
    revision: Union[Annotated[str, Field(max_length=MAX_TEXT)], None] = Field(
        None, description=f"a revision of at most {MAX_TEXT} characters")
    commit: Union[Commit, None] = None
    local: bool = False


class HostRecord(Record):
    """host.json."""

    RULE: ClassVar[str] = "a host record (a JSON object)"

    versions: Annotated[dict[Name, Version], Field(max_length=1_000, description=(
        f"package names and their versions (at most {MAX_TEXT} characters)"))] = {}
    host: HostInfo = HostInfo()
    models: Annotated[dict[StepId, dict[Name, ModelRevision]], Field(max_length=100_000, description=(
        "step ids and the models each loads"))] = {}


class EnvironmentRecord(RootModel[Env]):
    """environment.json: variable names and values (``results.provenance.environment_record``)."""

    model_config = ConfigDict(strict=True, frozen=True)


FIX = "it is not a record this tool wrote"


def host_checked(data: Any, where: str) -> HostRecord:
    return validated(HostRecord, data, where, FIX)


def environment_checked(data: Any, where: str) -> EnvironmentRecord:
    return validated(EnvironmentRecord, data, where, FIX)


def read_host(path: Path) -> HostRecord:
    """host.json read back: the validated model, or UserError naming the file, the field and the rule."""
    from llama4spec.files import plain, read_json

    return host_checked(read_json(Path(path)), plain(str(path)))


def read_environment(path: Path) -> EnvironmentRecord:
    """environment.json read back: the validated model, or UserError (one line)."""
    from llama4spec.files import plain, read_json

    return environment_checked(read_json(Path(path)), plain(str(path)))


def host_or_problem(path: Path) -> tuple[HostRecord | None, str | None]:
    """(host.json's model, None); (None, None) without one; (None, the one-line problem)."""
    from llama4spec.records.io import model_or_problem

    return model_or_problem(read_host, path)


def environment_or_problem(path: Path) -> tuple[EnvironmentRecord | None, str | None]:
    """(environment.json's model, None); (None, None) without one; (None, the one-line problem)."""
    from llama4spec.records.io import model_or_problem

    return model_or_problem(read_environment, path)


register(Entry("host.json", HostRecord, "llama4spec.host/1",
                      "versions, the host and the models' commits: `run` writes it; report.html, `regress`, "
                      "`report` and the launchers read it", read_host))
register(Entry("environment.json", EnvironmentRecord, "llama4spec.environment/1",
                             "the run's environment variables: `run` writes it; report.html and `regress` read it",
                             read_environment))
