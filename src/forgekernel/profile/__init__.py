"""Profiling: cost model and roofline, launch counting, Nsight Compute, compile reports."""
