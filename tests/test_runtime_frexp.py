"""The runtime's frexp helper (Inductor's kernels call ``triton_helpers.frexp``; an FP8
block-scaling operator, our 151, was refused for want of it) against torch.frexp, edge
cases included, under the Triton interpreter in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = r'''
import torch, triton, triton.language as tl
from forgekernel.generate.library.runtime import _th_frexp

@triton.jit
def k(x_ptr, m_ptr, e_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    m, e = _th_frexp(tl.load(x_ptr + offs, mask=mask))
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(e_ptr + offs, e, mask=mask)

g = torch.Generator().manual_seed(0)
x = torch.cat([torch.randn(2000, generator=g) * 10.0 ** torch.randint(-30, 30, (2000,), generator=g).float(),
               torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 3e-39, -1e-45, 1.17549435e-38, float("inf"),
                             float("-inf"), float("nan"), 3.4e38])])
m, e = torch.empty_like(x), torch.empty(x.shape, dtype=torch.int32)
k[(triton.cdiv(x.numel(), 256),)](x, m, e, x.numel(), BLOCK=256)
wm, we = torch.frexp(x)
assert torch.equal(e, we), (x[e != we][:5], e[e != we][:5], we[e != we][:5])
assert torch.equal(m.nan_to_num(7.0), wm.nan_to_num(7.0)) and torch.equal(torch.signbit(m), torch.signbit(wm))
print("ok")
'''


def test_frexp_helper_matches_torch():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-W", "error", "-c", CHECK], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
