"""Self-contained Triton kernels that generated candidates paste in for library calls.

TorchInductor leaves matrix products, convolutions, sorting, top-k and most scatter reductions to extern kernels
(cuBLAS, cuDNN) or ATen;
forge's generator replaces those calls with its own Triton kernels, taken from the files of
this package. Each file is a complete Python module (importing only torch, triton,
triton.language and math) shipped as data, never imported by forge itself:

* ``gemm``: ``mm``, ``addmm``, ``bmm``, ``baddbmm`` (aten semantics), knobs ``GEMM_*``;
* ``conv``: ``convolution`` (aten.convolution semantics, 1-D/2-D/3-D, groups, transposed),
  knobs ``CONV_*``;
* ``sort``: ``sort`` and ``topk`` (values and indices, one row per program), knob ``SORT_*``;
* ``scatter``: ``scatter_reduce`` with amax, amin and mean (float atomics), knob ``SCATTER_*``;
* ``rnn``: ``rnn_tanh``, ``rnn_relu``, ``gru`` and ``lstm`` over a sequence (one launch per
  time step), knobs ``RNN_*``; it calls ``gemm``'s ``addmm`` and ``mm``, pasted beside it.

Every module-level name carries the file's prefix (``GEMM_``/``_gemm_``, ``CONV_``/``_conv_``)
apart from the public functions, so several files can be pasted into one module. The knobs
sit in a ``# --- knobs ---`` ... ``# --- end ---`` header block that a search may rewrite.
"""

from __future__ import annotations

from importlib import resources

NAMES: tuple[str, ...] = ("gemm", "conv", "sort", "scatter", "rnn")
"""The library files, by name (``<name>.py`` in this package)."""


def source(name: str) -> str:
    """The text of library file ``name`` (one of :data:`NAMES`, or another ``<name>.py``
    shipped in this package)."""
    path = resources.files(__package__).joinpath(f"{name}.py")
    if name.startswith("_") or "/" in name or not path.is_file():
        raise KeyError(f"no library file {name!r}; known: {', '.join(NAMES)}")
    return path.read_text()
