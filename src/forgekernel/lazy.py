"""Package attributes imported on first use (PEP 562), for packages a fresh worker imports
before it has anything to wait for: the verifier starts its executor sooner when importing
``forgekernel.judge`` does not pull in pydantic, the deliveries and the records."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def attributes(package: str, origin: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` serving each name of ``origin`` (name ->
    module path) from its module, imported when the name is first read."""
    namespace = importlib.import_module(package).__dict__

    def getattr_(name: str) -> Any:
        if name not in origin:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(origin[name]), name)
        namespace[name] = value
        return value
    return getattr_
