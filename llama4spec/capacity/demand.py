"""What a capacity step's answer means for a deployment (``load:``, ``price:`` on the step; ``--load``,
``--gpu-hour-price`` on ``capacity``): per setting, the servers and devices a request rate needs under
the SLO with their interval, the devices the draft saves against no speculation, and the price of a
million output tokens at the capacity (``frontier.load``). Devices per server come from each
setting's config.yaml (tensor x pipeline x data parallel; a CPU server counts as one device)."""

from __future__ import annotations

from typing import Any, Mapping

from llama4spec.frontier.curve import device_word, devices
from llama4spec.frontier.load import Need, need, need_text, saved, saved_text
from llama4spec.frontier.price import per_million


def _output_tps(entry: Mapping[str, Any]) -> float | None:
    """A setting's output tok/s at its capacity: the fit's interpolation, or the runs' mean at the rate."""
    at = entry.get("output_tps_at")
    if at is None and entry.get("search") == "bisect":
        at = (entry.get("output_tps") or [None])[0]
    return at if isinstance(at, (int, float)) and at > 0 else None


def _needs(record: Mapping[str, Any], sizes: Mapping[str, int], load: float, price: float | None) -> dict[str, Need]:
    return {name: need(name, load, e.get("rate"), e.get("low"), e.get("high"), sizes.get(name, 1), _output_tps(e), price)
            for name, e in record["settings"].items()}


def demand(record: Mapping[str, Any], configs: Mapping[str, Mapping[str, Any]], load: float | None,
           price: float | None) -> dict[str, Any] | None:
    """capacity.json's ``demand``: the load and price as given, per setting its servers, devices and
    price, what each speculative setting saves, and the lines that say it; None without either."""
    if load is None and price is None:
        return None
    word = device_word(configs.values()) if configs else "device"
    sizes = {name: devices(c) for name, c in configs.items()}
    baseline = record.get("baseline")
    out: dict[str, Any] = {"load": load, "price": price, "device": word, "settings": {}, "saved": {}, "lines": []}
    for name, e in record["settings"].items():
        tps = _output_tps(e)
        out["settings"][name] = {"devices_per_server": sizes.get(name, 1), "output_tps": tps,
                                 "price_per_million": per_million(price, tps / sizes.get(name, 1))
                                 if price is not None and tps else None}
    if load is not None:
        needs = _needs(record, sizes, load, price)
        for name, n in needs.items():
            out["settings"][name].update(servers=n.replicas, devices=n.devices, devices_interval=list(n.devices_between()))
            out["lines"].append(need_text(n, load, word))
        base = needs.get(baseline) if baseline else None
        for name, n in needs.items():
            if base is not None and name != baseline:
                est, low, high = saved(n, base)
                out["saved"][name] = {"devices": est, "interval": [low, high]}
                out["lines"].append(saved_text(n, base, word))
    elif price is not None:
        out["lines"] += [f"{name}: {s['price_per_million']:.4g} a million output tokens at its capacity"
                         for name, s in out["settings"].items() if s["price_per_million"] is not None]
    return out


def clause(record: Mapping[str, Any], d: Mapping[str, Any] | None) -> str | None:
    """The headline's clause for a load: ``EAGLE k=3 needs 7 GPUs instead of 10 for 12 req/s (saves
    [2, 4])`` for the setting the headline names first (else the one that saves most), or None."""
    if not d or d.get("load") is None or not d["saved"]:
        return None
    head = record.get("headline") or ""
    best = next((n for n in d["saved"] if head.startswith(f"{n} ")),  # the setting the headline names first
                max(d["saved"], key=lambda n: (d["saved"][n]["devices"] is not None, d["saved"][n]["devices"] or 0)))
    mine, base = d["settings"][best], d["settings"].get(record.get("baseline") or "", {})
    if mine.get("devices") is None or base.get("devices") is None:
        return None
    word = d["device"]
    low, high = d["saved"][best]["interval"]
    span = f"[{'?' if low is None else low}, {'no upper bound' if high is None else high}]"
    n = lambda k: f"{k} {word}{'s' if k != 1 else ''}"  # noqa: E731
    return f"{best} needs {n(mine['devices'])} instead of {base['devices']} for {d['load']:g} req/s (saves {span})"
