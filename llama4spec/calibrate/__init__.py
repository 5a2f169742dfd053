"""The noise calibration of a machine: one setting started m times with r runs each (one after
another, or back to back in start pairs), its variance components, costs and fingerprint written to
noise.json, and an A/A check of the whole chain. ``plan`` is pure; ``record`` reads the run's records."""
