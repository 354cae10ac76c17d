"""What a run's records say, in words and plots: report.md, its PNGs, `forge status`."""
