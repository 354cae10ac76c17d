"""judge package."""
