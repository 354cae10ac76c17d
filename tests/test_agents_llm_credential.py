"""Opt-in (FK_TEST_CREDENTIALS=1): each backend once against the real service, tiny budget."""

from __future__ import annotations

import pytest

from forgekernel.agents import backend_module
from forgekernel.config import load_settings
from llm_agent_support import START_KERNEL, coder_ctx, workspace

pytestmark = pytest.mark.credential


@pytest.mark.parametrize("name", ["anthropic", "openai", "claude-code"])
def test_real_backend_edits_the_kernel(tmp_path, name):
    settings = load_settings()
    coder = backend_module(name).make_coder(settings, max_turns=8)
    ws = workspace(tmp_path)
    res = coder.implement(coder_ctx(ws, check=False))
    assert res.error == "", res.error
    assert res.cost.input_tokens > 0 and res.cost.output_tokens > 0
    assert (ws / "kernel.py").read_text() != START_KERNEL
