"""A ``fetch`` step: download the models its config needs (target, EAGLE draft, separate tokenizer)
into the Hugging Face cache before any server starts (``llama4spec.models.download``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llama4spec.errors import UserError
from llama4spec.runbook import fields
from llama4spec.runbook.steps.environ import process_env
from llama4spec.runbook.spec import Traits
from llama4spec.runbook.steps.base import BaseKind


@dataclass
class Keys:
    overrides: list[str] = fields.overrides()


def plan(ctx, p) -> None:
    p.composed = ctx.compose(p.step.keys.overrides, p.id)
    if p.composed is None:
        return
    p.argv = ["llama4spec", "fetch", *p.composed.overrides]
    p.env = dict(ctx.runbook.env)  # HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE from the runbook count
    p.artifacts = {"config_file": p.dir / "config.yaml"}


def execute(run, p) -> dict[str, Any]:
    from llama4spec.models.download import download, fetch_plan, human_size

    pad = run.output.indent
    environ = {**run.environ, **p.env}
    fetched: dict[str, Any] = {}
    problems: list[str] = []
    plan = fetch_plan(p.composed.cfg)
    with process_env(p.env):  # HF_TOKEN and friends from the runbook's env, as the servers get them
        for d in plan:
            if d.skip:
                run.say(f"{pad}skip {d.key} {d.repo}: {d.skip}")
                continue
            run.say(f"{pad}fetch {d.key} {d.repo} at revision {d.at}")
            try:
                f = download(d, environ)
            except UserError as err:
                problems += err.problems
                continue
            run.say(f"{pad}  commit {f.commit or '?'}: {len(f.files)} files, {human_size(f.size)} in {f.path}")
            for name, size in f.files:
                run.say(f"{pad}    {name}  {human_size(size)}")
            fetched[d.role] = {"model": d.repo, "revision": d.revision, "commit": f.commit, "path": str(f.path),
                               "files": len(f.files), "bytes": f.size}
    if all(d.skip for d in plan):
        run.say(f"{pad}nothing to fetch")
    if problems:
        run.partial(p.id, {"models": fetched})  # what did arrive
        raise UserError(*problems)
    return {"models": fetched}


def describe(p, say) -> None:
    from llama4spec.models.download import fetch_plan, plan_lines

    if p.composed is None:
        return
    for line in plan_lines(p.composed.cfg, fetch_plan(p.composed.cfg), environ=_environ(p)):
        say(f"    {line}")


def _environ(p) -> dict[str, str]:
    import os

    return {**os.environ, **p.env}


KIND = BaseKind("fetch", Keys, Traits(loads_models=True, shows_env=True), plan, execute, describe)
