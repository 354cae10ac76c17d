"""The language part of the LLM prompts: each language's contract for the coder, and what the
architect is told when a task allows several languages (docs/languages.md)."""

from __future__ import annotations

from forgekernel.records import TaskSpec

LANGUAGE_RULES = {
    "triton": ("Language: triton, for {arch} GPUs. Triton kernels must also run under the Triton CPU\n"
               "  interpreter (`TRITON_INTERPRET=1`) on the small workloads."),
    "cuda": ("Language: cuda (CUDA C++), for {arch} GPUs. Write the kernels as `__global__` functions in a\n"
             "  CUDA source string of `kernel.py` (or `.cu` files next to it) and build it once per process\n"
             "  with `torch.utils.cpp_extension.load_inline(name=..., cpp_sources=..., cuda_sources=...,\n"
             "  functions=[...])`, a hash of the source in `name`. Include `<torch/extension.h>` and CUDA's own\n"
             "  headers only (no ATen/cuda or c10/cuda headers): pass\n"
             "  `torch.cuda.current_stream().cuda_stream` in as an int64 and launch on that stream. The\n"
             "  judge first compiles the source with `nvcc -arch=sm_90a -std=c++17`; a compile error comes\n"
             "  back naming your line. These candidates never run on the CPU interpreter."),
    "cute-dsl": ("Language: cute-dsl (CuTe DSL: `import cutlass`, `import cutlass.cute as cute`), for {arch}\n"
                 "  GPUs. Write `@cute.kernel` device code and a `@cute.jit` host function that launches it;\n"
                 "  compile it with `cute.compile(...)` once per process and per dtype/shape class (keep the\n"
                 "  compiled function), and call it on tensors wrapped with\n"
                 "  `cutlass.cute.runtime.from_dlpack`. Pass the caller's stream in\n"
                 "  (`cuda.CUstream(torch.cuda.current_stream().cuda_stream)`, `import cuda.bindings.driver\n"
                 "  as cuda`) and launch on it. Decide Python-level branches with\n"
                 "  `cutlass.const_expr(...)`. These candidates never run on the CPU interpreter."),
}
"""The system prompt's language line(s): the contract of each language forge judges."""


def language_rules(task: TaskSpec) -> str:
    """The contract of each language the task allows (the first is the task's own)."""
    rules = [LANGUAGE_RULES[lang].format(arch=task.arch) for lang in task.allowed_languages()]
    if len(rules) > 1:
        rules.append("Each decision row names the language its kernel is written in; write that one.")
    return "\n- ".join(rules)


def architect_languages(task: TaskSpec) -> str:
    langs = task.allowed_languages()
    if len(langs) == 1:
        return langs[0]
    return (f"{langs[0]} (also allowed: {', '.join(langs[1:])}; pick one per milestone and name it in "
            "each row's decision: a structure another language can express better, warp "
            "specialisation or explicit TMA pipelines say, is an M0 choice)")
