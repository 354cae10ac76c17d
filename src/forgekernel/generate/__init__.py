"""Candidates generated from the reference itself (no LLM).

:mod:`.inductor` lowers a reference through TorchInductor's Triton code generation ahead of
time; :mod:`.assemble` turns what Inductor wrote into a standalone candidate with forge's
launch runtime and forge's own Triton kernels for the library parts (``library/``).
"""
