"""Pure statistics and models over measured runs, by topic."""
