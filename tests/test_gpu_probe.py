"""The GPU probe that picks a delivery without importing torch: NVML answers, with
CUDA_VISIBLE_DEVICES applied, through a stand-in for the driver's library built from C."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from forgekernel.delivery import gpu_probe

FIXTURE = Path(__file__).parent / "fixtures" / "nvml" / "fake_nvml.c"
TWO = "NVIDIA H200,GPU-aaaa-1111;NVIDIA A100-SXM4-80GB,GPU-bbbb-2222"


@pytest.fixture(scope="module")
def fake_nvml(tmp_path_factory: pytest.TempPathFactory) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the NVML stand-in")
    lib = tmp_path_factory.mktemp("nvml") / "libfake-nvml.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(FIXTURE)], check=True)
    return str(lib)


@pytest.mark.parametrize(("visible", "expected"), [
    (None, "NVIDIA H200"),
    ("1", "NVIDIA A100-SXM4-80GB"),
    ("1,0", "NVIDIA A100-SXM4-80GB"),
    ("GPU-bbbb-2222", "NVIDIA A100-SXM4-80GB"),
    ("", None),
    ("-1", None),
    ("2", None),
    ("MIG-1234", gpu_probe.UNKNOWN),
    ("GPU-none", gpu_probe.UNKNOWN),
])
def test_nvml_names_the_first_visible_device(fake_nvml: str, monkeypatch: pytest.MonkeyPatch,
                                             visible: str | None, expected: str | None) -> None:
    monkeypatch.setenv("FAKE_NVML_DEVICES", TWO)
    env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert gpu_probe.nvml_name(fake_nvml, env) == expected


def test_no_device_and_no_driver(fake_nvml: str, monkeypatch: pytest.MonkeyPatch,
                                 tmp_path: Path) -> None:
    monkeypatch.setenv("FAKE_NVML_DEVICES", "")
    assert gpu_probe.nvml_name(fake_nvml, {}) is None
    monkeypatch.setenv("FAKE_NVML_INIT", "fail")
    assert gpu_probe.nvml_name(fake_nvml, {}) == gpu_probe.UNKNOWN
    assert gpu_probe.nvml_name(str(tmp_path / "absent.so"), {}) == gpu_probe.UNKNOWN


def test_choosing_a_delivery_imports_no_torch() -> None:
    """`forge judge --delivery auto` decides in its own process; torch is left to the worker."""
    code = ("import sys\n"
            "from forgekernel.delivery.base import resolve_delivery\n"
            "name, why = resolve_delivery('auto')\n"
            "print(name, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    name, imported = out.stdout.split()
    assert imported == "False"
    assert name in ("cpu", "local")
