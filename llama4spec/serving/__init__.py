"""Process owners: local and multi-node servers (one interface), the benchmark runner."""
