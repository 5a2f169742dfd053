"""A capacity step banded by input length (``bands:``): its searches grouped by band, and, over the
bands' analyses (each band's gains taken against no speculation's capacity in the same band), where
speculation stops adding capacity (pure).

In ascending order of input length, speculation **adds capacity** in a band where some speculative
setting's gain is declared above 1 (its interval's low end above 1), and **costs capacity** where
every speculative setting's gain is declared below 1 (the high end below 1). It stops adding capacity
between the last band where it adds and the next one, when no band from that one on adds; what vLLM
0.32 lets a user do about it is a route of the longer prompts to a server without speculation, said
only where speculation is declared to cost capacity (``analysis.band_report.NO_SETTING``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from llama4spec.analysis.band_report import NO_SETTING
from llama4spec.analysis.bands import InputBand, parse_band


@dataclass(frozen=True)
class Group:
    """One band's searches (``Setting``s of ``write_report``) and the search of no speculation among them."""

    band: InputBand | None  # None: a step not banded
    settings: list[Any]
    baseline: str | None


def groups(settings: Sequence[Any], baseline: str | None, band_of: Mapping[str, str]) -> list[Group]:
    """The searches per band, by ascending input length (each band's baseline: the search of the
    baseline's setting in that band); one group of every search for a step not banded, or when a
    search's band cannot be read."""
    if not band_of:
        return [Group(None, list(settings), baseline)]
    base_name = next((s.name for s in settings if s.id == baseline), None)
    by_band: dict[InputBand, list[Any]] = {}
    for s in settings:
        band = parse_band(band_of.get(s.id, ""))
        if band is None:
            return [Group(None, list(settings), baseline)]
        by_band.setdefault(band, []).append(s)
    return [Group(band, mine, next((s.id for s in mine if s.name == base_name), None))
            for band, mine in sorted(by_band.items())]


@dataclass(frozen=True)
class BandGain:
    """The best speculative setting's gain in one band (by its estimate), and the band's verdict."""

    band: InputBand
    best: str | None
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str  # "more": some setting declared above 1; "less": every one declared below 1; else "undecided"


def band_gain(band: InputBand, record: Mapping[str, Any]) -> BandGain:
    """One band's analysis (capacity.json's record of that band) in one verdict."""
    gains = {n: g for n, s in record["settings"].items() if (g := s.get("gain")) is not None}
    if not gains:
        return BandGain(band, None, None, None, None, "not measured")
    best = max(gains, key=lambda n: gains[n]["ratio"] if gains[n]["ratio"] is not None else -1.0)
    g = gains[best]
    more = any(x["low"] is not None and x["low"] > 1 for x in gains.values())
    less = all(x["high"] is not None and x["high"] < 1 for x in gains.values())
    return BandGain(band, best, g["ratio"], g["low"], g["high"], "more" if more else "less" if less else "undecided")


def _names(found: Sequence[BandGain]) -> str:
    return ", ".join(g.band.label for g in found)


def sentence(found: Sequence[BandGain]) -> str:
    """Where speculation stops adding capacity over the bands, in one sentence."""
    measured = [g for g in found if g.verdict != "not measured"]
    paying = [i for i, g in enumerate(measured) if g.verdict == "more"]
    if len(measured) < 2:
        return "fewer than two bands measured: no break between bands can be located"
    if len(paying) == len(measured):
        return f"speculation adds capacity in every band measured ({_names(measured)})"
    if not paying:
        return f"speculation adds capacity in no band measured ({_names(measured)})"
    last = paying[-1]
    if paying != list(range(last + 1)):
        return (f"speculation adds capacity in {_names([measured[i] for i in paying])} but not in every band below "
                f"the longest: no single break between adjacent bands")
    less = [g for g in measured[last + 1:] if g.verdict == "less"]
    said = f"; declared to cost capacity in {_names(less)}" if less else ""
    return (f"speculation stops adding capacity between {measured[last].band.label} and "
            f"{measured[last + 1].band.label} of input: no setting's gain is declared above 1 from "
            f"{measured[last + 1].band.label} on{said}")


def routing(found: Sequence[BandGain]) -> str | None:
    """What can be done about it with vLLM 0.32, at a located break: route the prompts of the longest
    bands, where every speculative setting is declared to cost capacity, to a server without
    speculation (None where no break is located or no such run of bands ends the list)."""
    measured = [g for g in found if g.verdict != "not measured"]
    paying = [i for i, g in enumerate(measured) if g.verdict == "more"]
    if not paying or paying != list(range(paying[-1] + 1)):
        return None  # no break located: speculation adds capacity nowhere, or not below the break alone
    tail: list[BandGain] = []
    for g in reversed(measured[paying[-1] + 1:]):
        if g.verdict != "less":
            break
        tail.insert(0, g)
    if not tail:
        return None
    below = measured[len(measured) - len(tail) - 1].band
    gains = "; ".join((f"{1 / g.ratio:.2f}x [{1 / g.high:.2f}, {'no upper bound' if not g.low else f'{1 / g.low:.2f}'}]"
                       if g.ratio else f"at least {1 / g.high:.2f}x") + f" the requests of {g.best} in {g.band.label}"
                      for g in tail if g.high)
    return (f"{NO_SETTING}. What it can do: route prompts longer than {below.high} tokens to a server without "
            f"speculation and keep speculation for shorter ones; measured, no speculation carries {gains} under "
            f"the SLO")


def record(parts: Sequence[tuple[InputBand, Mapping[str, Any]]]) -> dict[str, Any]:
    """capacity.json's ``input_bands``: the bands, each band's best gain and verdict, the break and routing."""
    found = [band_gain(band, r) for band, r in parts]
    return {"bands": [band.record() for band, _ in parts],
            "gains": [{"band": g.band.label, "best": g.best, "ratio": g.ratio, "low": g.low, "high": g.high,
                       "verdict": g.verdict} for g in found],
            "sentence": sentence(found), "routing": routing(found)}


def _gain_text(g: Mapping[str, Any]) -> str:
    if g["ratio"] is None:
        return "-"
    low = "-" if g["low"] is None else f"{g['low']:.2f}"
    return f"{g['ratio']:.2f}x [{low}, " + ("no upper bound" if g["high"] is None else f"{g['high']:.2f}") + "]"


def lines(bands: Mapping[str, Any] | None) -> list[str]:
    """The bands in words (report.html's lines): each band's best gain and verdict, the break, the route."""
    if not bands:
        return []
    return [*(f"{g['band']}: best {g['best'] or '-'} at {_gain_text(g)} the requests of no speculation "
              f"({g['verdict']})" for g in bands["gains"]),
            bands["sentence"], *([bands["routing"]] if bands.get("routing") else [])]


def markdown(bands: Mapping[str, Any] | None) -> list[str]:
    """report.md's section on the bands (nothing for a step not banded)."""
    if not bands:
        return []
    rows = [f"| {g['band']} | {g['best'] or '-'} | {_gain_text(g)} | {g['verdict']} |" for g in bands["gains"]]
    return ["## Input length", "",
            "Each band's capacities are searched on the same servers and compared with no speculation's in the "
            "same band (the table above: a row per setting and band); a band's verdict is \"more\" where some "
            "setting's gain is declared above 1, \"less\" where every one is declared below 1.", "",
            "| input band | best setting | its gain | verdict |", "|---|---|---|---|", *rows, "",
            f"- {bands['sentence']}", *([f"- {bands['routing']}"] if bands.get("routing") else []), ""]
