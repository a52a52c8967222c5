"""deteval test package."""
