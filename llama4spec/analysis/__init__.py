"""Sweeps: a matrix of settings in a runbook, measured point by point, and the reading of it."""
