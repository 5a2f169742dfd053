"""The dry run's last part for server groups: the groups, what each asks for, when it may start,
how it runs, and the note on sequential sweeps whose servers become groups run side by side."""

from __future__ import annotations

from rich.console import Console

from llama4spec.launch import job_table as render
from llama4spec.launch.here import command
from llama4spec.launch.options import RunOptions


def sequential_sweeps(plan, groups, at_once: bool) -> list[str]:
    """A note for each sequential sweep whose servers become several groups that may run at once:
    its points may then be compared across different co-location (named by the report)."""
    if not at_once:
        return []
    group_of = {sid: g.name for g in groups for sid in g.steps}
    out = []
    for p in plan.steps:
        if not p.step.traits.expands or p.step.kind_of.plan_record(p.step)["design"]["design"] != "sequential":
            continue
        mine = {group_of[b] for b in p.step.points if b in group_of}
        if len(mine) > 1:
            out.append(f"note: sweep '{p.id}' measures its {len(mine)} servers as separate groups, which may run "
                       f"beside each other; the report names points compared across different co-location. "
                       f"design: interleaved (with repeats: N) keeps no speculation beside each candidate in "
                       f"one group")
    return out


def show_groups(plan, groups, use_slurm: bool, opts: RunOptions, console: Console) -> None:
    """The dry run's last part: the groups, what each asks for, when it may start, how it runs."""
    from rich.table import Table
    from rich.text import Text

    from llama4spec.runbook.groups import local_steps, merge_steps, waves

    wave_of = {g.name: n for n, wave in enumerate(waves(groups), 1) for g in wave}
    how = "Slurm jobs (one array per shape)" if use_slurm else f"up to {opts.parallel or 1} at once here"
    t = Table(title=f"{len(groups)} server groups, as {how}", title_justify="left")
    for column in ("group", "steps", "asks for", "wave", "after"):
        t.add_column(column)
    for g in groups:
        t.add_row(Text(g.name), str(len(g.steps)), Text(g.shape.label), str(wave_of[g.name]),
                  Text(", ".join(g.after) or "-"))
    console.print(t)
    if use_slurm:
        from llama4spec.launch.slurm import parameters

        seen = set()
        for g in groups:
            if g.shape in seen:
                continue
            seen.add(g.shape)
            params = parameters(plan.get(g.name).composed.cfg.cluster.slurm, g.shape, f"l4s-{plan.runbook.name}",
                                sum(x.shape == g.shape for x in groups))
            render.say(console, f"submitit parameters for {g.shape.label}: " + ", ".join(f"{k}={v}" for k, v in params.items()))
    for line in sequential_sweeps(plan, groups, use_slurm or (opts.parallel or 1) > 1):
        render.say(console, line)
    here, merged = local_steps(plan), merge_steps(plan)
    if here:
        render.say(console, f"run here before the groups: {', '.join(here)}")
    if merged:
        render.say(console, f"when results merge (llama4spec report): {', '.join(merged)}")
    import shlex

    argv = command(opts, plan.runbook.path, plan.run_dir, groups[0].name)
    render.say(console, f"each group runs: {shlex.join(['llama4spec', *argv[argv.index('run'):]])}")
