"""Pure statistics and models, by topic (no I/O): fitted capacity curves, and more as they move here."""
