"""Agent backends, picked by short name from a registry (imported lazily)."""

from __future__ import annotations

import importlib

from forgekernel.agents.base import (
    AgentError,
    ArchitectContext,
    ArchitectResult,
    CoderContext,
    CoderResult,
)
from forgekernel.protocols import Architect, Coder

BACKENDS: dict[str, str] = {
    "builtin": "forgekernel.agents.builtin",
    "scripted": "forgekernel.agents.scripted",
    "claude-code": "forgekernel.agents.claude_code",
    "anthropic": "forgekernel.agents.anthropic_api",
    "openai": "forgekernel.agents.openai_api",
}
"""Name -> module. Each module exposes ``make_coder(settings)`` and ``make_architect(settings)``."""


def backend_module(name: str):
    if name not in BACKENDS:
        raise AgentError(f"unknown agent '{name}'; use one of {', '.join(BACKENDS)}")
    return importlib.import_module(BACKENDS[name])


__all__ = ["AgentError", "Architect", "ArchitectContext", "ArchitectResult", "BACKENDS", "Coder",
           "CoderContext", "CoderResult", "backend_module"]
