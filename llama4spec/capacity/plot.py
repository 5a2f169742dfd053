"""The fitted capacity curves on one figure (matplotlib, Agg backend: no display needed).

Per server setting: every run as a point (its attainment at its rate; a run set aside as an outlier
as a cross), the fitted curve with its pointwise band, the capacity interval on the target line;
where the logistic shape does not fit,
the isotonic curve instead, dashed. The labels of the series drawn are returned and stored in the
PNG's text metadata under ``Series`` (JSON), as every plot of this tool does.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from llama4spec.capacity.curve import isotonic_curve
from llama4spec.capacity.fit import Answer, Run
from llama4spec.files import write_atomic

SERIES_KEY = "Series"


def capacity_fits(settings: Mapping[str, tuple[Sequence[Run], Answer]], target: float, path: Path) -> list[str]:
    """Attainment against request rate (log scale) for every setting, ``settings``: name -> (its
    runs, its answer), with the target as a dashed line; writes ``path``, returns the labels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, (runs, a)) in enumerate(settings.items()):
        colour = colours[i % len(colours)]
        if not runs:
            continue
        rates = [r.rate for r in runs]
        aside = {o.index for o in a.outliers}
        kept = [r for i, r in enumerate(runs) if i not in aside]
        ax.scatter([r.rate for r in kept], [r.attainment for r in kept], s=14, color=colour, alpha=0.6,
                   label=f"{name}: runs")
        if aside:
            ax.scatter([o.rate for o in a.outliers], [o.attainment for o in a.outliers], s=30, marker="x",
                       color=colour, label=f"{name}: runs set aside as outliers")
        if a.fit is not None and a.shape_fits:
            xs = np.exp(np.linspace(math.log(min(rates)), math.log(max(rates)), 120))
            ax.plot(xs, [a.fit.attainment(x) for x in xs], color=colour, label=f"{name}: fitted curve")
            band = [a.fit.band(x, a.confidence) for x in xs]
            ax.fill_between(xs, [b[0] for b in band], [b[1] for b in band], color=colour, alpha=0.15,
                            label=f"{name}: {a.confidence:.0%} band")
        else:
            xs, ys = isotonic_curve(kept)
            ax.step(xs, ys, where="mid", color=colour, linestyle="--",
                    label=f"{name}: isotonic (the logistic shape does not fit)")
        if a.estimate is not None and a.shape_fits:
            # an open end is drawn to the runs' range (or none, when the estimate lies beyond it)
            low = a.low if a.low is not None else min(min(rates), a.estimate)
            high = a.high if a.high is not None else max(max(rates), a.estimate)
            words = (f"{a.low:.3g}" if a.low is not None else "open", f"{a.high:.3g}" if a.high is not None else "open")
            ax.errorbar([a.estimate], [target], xerr=[[a.estimate - low], [high - a.estimate]], fmt="D",
                        color=colour, capsize=4, label=f"{name}: capacity {a.estimate:.3g} [{words[0]}, {words[1]}]")
        elif a.isotonic is not None:
            ax.plot([a.isotonic], [target], "x", color=colour, label=f"{name}: isotonic capacity {a.isotonic:.3g}")
    ax.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target attainment {target:g}")
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("request rate (req/s)")
    ax.set_ylabel("attainment (good requests / sent)")
    title = "Request capacity: attainment against rate"
    _, labels = ax.get_legend_handles_labels()
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=100, metadata={"Title": title, SERIES_KEY: json.dumps(labels)})
    plt.close(fig)
    write_atomic(path, image.getvalue())
    return labels
