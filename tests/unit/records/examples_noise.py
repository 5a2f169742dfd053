"""A valid noise.json, as ``llama4spec calibrate`` writes it (``stats.profile.profile_json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable


def noise(tmp: Path) -> Path:
    from llama4spec.stats.noise import prior
    from llama4spec.stats.profile import Profile, profile_json
    from llama4spec.stats.profile import Fingerprint

    fp = Fingerprint("0.32.0", "cpu", "cpu", "x86_64 2 cores", "tiny", 1, 4)
    profile = Profile(prior(0.03, 0.05, "x", between_df=5, within_df=18), 40.0, 8.0, fp, "sequential", 6, 4)
    path = tmp / "noise.json"
    path.write_text(json.dumps(profile_json(profile)))
    return path


EXAMPLES: dict[str, Callable[[Path], Path]] = {"noise": noise}
