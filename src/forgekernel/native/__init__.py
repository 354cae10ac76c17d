"""Candidates in languages other than Triton: find their sources, compile them without a GPU.

* :mod:`forgekernel.native.sources`: the CUDA C++ a candidate carries (``*.cu`` files, and
  the string constants of its Python files that define ``__global__`` functions, as a
  ``torch.utils.cpp_extension.load_inline`` candidate writes them), each with the file and
  line it came from; which language a candidate is written in, by what it contains.
* :mod:`forgekernel.native.nvcc`: compile those sources for ``sm_90a`` with ``nvcc`` inside
  the sandbox (the source is untrusted: an ``#include`` of a credential file must not reach
  the feedback), cached by content hash; registers, shared memory and spills from ``ptxas
  -v``; errors as the first compiler lines, each mapped back to the candidate's own file and
  line.
"""
