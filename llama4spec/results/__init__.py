"""Typed records (bench, offline, acceptance), metrics, comparison and provenance."""
