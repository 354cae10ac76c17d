"""Shared test fixtures. GPU tests are skipped without CUDA; credential tests are opt-in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "tasks"


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    skip_cred = pytest.mark.skip(reason="opt-in: set FK_TEST_CREDENTIALS=1")
    has_cuda = None
    for item in items:
        if "gpu" in item.keywords:
            has_cuda = _cuda() if has_cuda is None else has_cuda
            if not has_cuda:
                item.add_marker(skip_gpu)
        if "credential" in item.keywords and os.environ.get("FK_TEST_CREDENTIALS") != "1":
            item.add_marker(skip_cred)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def tasks_dir() -> Path:
    return TASKS
