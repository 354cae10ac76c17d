"""forgekernel: a self-evolving GPU-kernel agent.

Importing the package has no side effects and imports neither torch nor triton.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
