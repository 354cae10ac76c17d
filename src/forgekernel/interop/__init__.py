"""Other benchmarks' formats: read a FlashInfer-Trace Definition (with its Workloads) as a
forge task, and write a run's best kernel as a FlashInfer-Trace Solution with Traces, a
SOL-ExecBench ``solution.json`` or a KernelBench ``ModelNew`` file (docs/tasks.md,
"Other formats")."""
