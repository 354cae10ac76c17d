"""Code generation for candidate kernels (see :mod:`forgekernel.generate.library`)."""
