"""forge library rnn: Triton stand-ins for aten rnn_tanh, rnn_relu, gru and lstm over a sequence.

Dynamo leaves a recurrent module (nn.RNN, nn.GRU, nn.LSTM) to one ATen call over the whole
sequence (cuDNN on a GPU). Here each layer and direction runs as:

1. the input's contribution to every gate at every step at once, one matrix product
   ``x @ W_ih^T + b_ih`` over all time steps (the library's ``addmm``, pasted beside this file);
2. a loop over time steps on the host, one launch of ``_rnn_step_kernel`` per step: each
   program computes a block of batch rows by a block of hidden units, the hidden-to-hidden
   products of every gate for that block (``tl.dot`` over the hidden size, fp32
   accumulation) and the gates' element-wise update (PyTorch's gate order and formulas),
   and writes the new hidden state straight into the layer's output at that step, which is
   the next step's previous state (the LSTM's cell state ping-pongs between two buffers);
   where one program holds the whole state (batch and hidden size within one block), a
   single launch of ``_rnn_seq_kernel`` runs every step instead, a barrier between them.

Public API (the aten ops' ``.input`` overloads, as Inductor's wrapper calls them):
``rnn_tanh(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``,
``rnn_relu(...)`` and ``gru(...)`` return ``(output, h_n)``; ``lstm(x, (h0, c0), params, ...)``
returns ``(output, h_n, c_n)``. Covered: float32, float16 and bfloat16, any number of layers,
both directions, ``batch_first``, with or without biases. Not covered (handed to PyTorch by
the same functions, which the judge counts as eager compute): LSTM projections
(``proj_size``) and dropout between layers while training.

Knobs (header below): RNN_BLOCK_B and RNN_BLOCK_H, the batch rows and hidden units of one
program (each clamped to the next power of two >= the size, at least 16), RNN_BLOCK_K the
hidden-size slice of one product step, RNN_NUM_WARPS (per-step kernel) and RNN_SEQ_WARPS
(whole-sequence kernel, which carries the cell state and four gates' sums), RNN_ALLOW_TF32 (1: fp32 products on
tf32 tensor cores, as cuDNN's RNNs do by default in PyTorch; 0: full precision).
"""

import torch
import triton
import triton.language as tl

# --- knobs ---
RNN_BLOCK_B = 16
RNN_BLOCK_H = 64
RNN_BLOCK_K = 64
RNN_NUM_WARPS = 4
RNN_SEQ_WARPS = 8
RNN_ALLOW_TF32 = 1
# --- end ---

_rnn_modes = {"rnn_tanh": 0, "rnn_relu": 1, "gru": 2, "lstm": 3}
# Under the CPU interpreter a launch costs milliseconds whatever its size: blocks large
# enough that a smoke workload's state fits one program, which runs the whole sequence.
_rnn_cpu_blocks = (64, 128, 128)


@triton.jit
def _rnn_dot(h, w_ptr, gate, rj, rk, H, mask, PRECISION: tl.constexpr):
    """h [BLOCK_B, BLOCK_K] times gate ``gate``'s rows of W_hh (rows gate*H + j, columns k)."""
    w = tl.load(w_ptr + (gate * H + rj)[None, :] * H + rk[:, None], mask=mask, other=0.0)
    return tl.dot(h, w.to(tl.float32), input_precision=PRECISION)


@triton.jit
def _rnn_gate_in(gi_ptr, bhh_ptr, gate, rb, rj, H, s_gi, mask):
    """(input part, hidden bias) of gate ``gate`` for the block, in fp32."""
    gin = tl.load(gi_ptr + rb[:, None] * s_gi + (gate * H + rj)[None, :], mask=mask, other=0.0).to(tl.float32)
    bh = tl.load(bhh_ptr + gate * H + rj, mask=rj < H, other=0.0).to(tl.float32)[None, :]
    return gin, bh


@triton.jit
def _rnn_sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _rnn_tanh(x):
    return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0


@triton.jit
def _rnn_cell(gi_ptr, h_ptr, s_h, w_ptr, bhh_ptr, c, B, H, s_gi, rb, rj, MODE: tl.constexpr,
              PRECISION: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr,
              BLOCK_K: tl.constexpr):
    """The new state of a block of batch rows (rb) by hidden units (rj): (h, c), c the LSTM's
    cell state (passed in and out; unused otherwise). MODE: 0 tanh RNN, 1 ReLU RNN, 2 GRU
    (gates r, z, n), 3 LSTM (gates i, f, g, o); bhh is zeros for a layer without biases."""
    mb, mj = rb < B, rj < H
    a0 = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    a1 = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    a2 = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    a3 = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    for k0 in range(0, H, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        mk = rk < H
        h = tl.load(h_ptr + rb[:, None] * s_h + rk[None, :], mask=mb[:, None] & mk[None, :], other=0.0)
        h = h.to(tl.float32)
        wmask = mk[:, None] & mj[None, :]
        a0 += _rnn_dot(h, w_ptr, 0, rj, rk, H, wmask, PRECISION)
        if MODE >= 2:
            a1 += _rnn_dot(h, w_ptr, 1, rj, rk, H, wmask, PRECISION)
            a2 += _rnn_dot(h, w_ptr, 2, rj, rk, H, wmask, PRECISION)
        if MODE == 3:
            a3 += _rnn_dot(h, w_ptr, 3, rj, rk, H, wmask, PRECISION)
    mask = mb[:, None] & mj[None, :]
    g0, b0 = _rnn_gate_in(gi_ptr, bhh_ptr, 0, rb, rj, H, s_gi, mask)
    if MODE == 0:
        new = _rnn_tanh(g0 + a0 + b0)
    elif MODE == 1:
        new = tl.maximum(g0 + a0 + b0, 0.0)
    elif MODE == 2:
        g1, b1 = _rnn_gate_in(gi_ptr, bhh_ptr, 1, rb, rj, H, s_gi, mask)
        g2, b2 = _rnn_gate_in(gi_ptr, bhh_ptr, 2, rb, rj, H, s_gi, mask)
        r = _rnn_sigmoid(g0 + a0 + b0)
        z = _rnn_sigmoid(g1 + a1 + b1)
        n = _rnn_tanh(g2 + r * (a2 + b2))
        prev = tl.load(h_ptr + rb[:, None] * s_h + rj[None, :], mask=mask, other=0.0).to(tl.float32)
        new = (1.0 - z) * n + z * prev
    else:
        g1, b1 = _rnn_gate_in(gi_ptr, bhh_ptr, 1, rb, rj, H, s_gi, mask)
        g2, b2 = _rnn_gate_in(gi_ptr, bhh_ptr, 2, rb, rj, H, s_gi, mask)
        g3, b3 = _rnn_gate_in(gi_ptr, bhh_ptr, 3, rb, rj, H, s_gi, mask)
        c = _rnn_sigmoid(g1 + a1 + b1) * c + _rnn_sigmoid(g0 + a0 + b0) * _rnn_tanh(g2 + a2 + b2)
        new = _rnn_sigmoid(g3 + a3 + b3) * _rnn_tanh(c)
    return new, c


@triton.jit
def _rnn_step_kernel(gi_ptr, h_ptr, w_ptr, bhh_ptr, out_ptr, c_ptr, c_next_ptr, B, H,
                     s_gi, s_h, s_out, MODE: tl.constexpr, PRECISION: tl.constexpr,
                     BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """One time step of one layer and direction, a block of batch rows by hidden units per
    program; the LSTM's cell state read from c_ptr and written to c_next_ptr."""
    rb = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    rj = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (rb < B)[:, None] & (rj < H)[None, :]
    c = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    if MODE == 3:
        c = tl.load(c_ptr + rb[:, None] * H + rj[None, :], mask=mask, other=0.0).to(tl.float32)
    new, c = _rnn_cell(gi_ptr, h_ptr, s_h, w_ptr, bhh_ptr, c, B, H, s_gi, rb, rj, MODE, PRECISION,
                       BLOCK_B, BLOCK_H, BLOCK_K)
    if MODE == 3:
        tl.store(c_next_ptr + rb[:, None] * H + rj[None, :], c.to(c_next_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + rb[:, None] * s_out + rj[None, :], new.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rnn_seq_kernel(gi_ptr, h0_ptr, w_ptr, bhh_ptr, out_ptr, c_ptr, B, H, T, s_gi_t, s_gi, s_h0,
                    s_out_t, s_out, REVERSE: tl.constexpr, MODE: tl.constexpr, PRECISION: tl.constexpr,
                    BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """The whole sequence of one layer and direction in one program, when one program holds
    every batch row and hidden unit: each step's state is stored into the output and, after
    a barrier, read back by the next; the LSTM's cell state stays in registers (written to
    c_ptr at the end). One launch instead of one per step."""
    rb = tl.arange(0, BLOCK_B)
    rj = tl.arange(0, BLOCK_H)
    mask = (rb < B)[:, None] & (rj < H)[None, :]
    c = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    if MODE == 3:
        c = tl.load(c_ptr + rb[:, None] * H + rj[None, :], mask=mask, other=0.0).to(tl.float32)
    t = T - 1 if REVERSE else 0
    new, c = _rnn_cell(gi_ptr + t * s_gi_t, h0_ptr, s_h0, w_ptr, bhh_ptr, c, B, H, s_gi, rb, rj, MODE,
                       PRECISION, BLOCK_B, BLOCK_H, BLOCK_K)
    tl.store(out_ptr + t * s_out_t + rb[:, None] * s_out + rj[None, :], new.to(out_ptr.dtype.element_ty), mask=mask)
    for step in range(1, T):
        prev = t
        t = T - 1 - step if REVERSE else step
        tl.debug_barrier()  # the previous step's stores seen by every thread of the program
        new, c = _rnn_cell(gi_ptr + t * s_gi_t, out_ptr + prev * s_out_t, s_out, w_ptr, bhh_ptr, c, B, H,
                           s_gi, rb, rj, MODE, PRECISION, BLOCK_B, BLOCK_H, BLOCK_K)
        tl.store(out_ptr + t * s_out_t + rb[:, None] * s_out + rj[None, :], new.to(out_ptr.dtype.element_ty),
                 mask=mask)
    if MODE == 3:
        tl.store(c_ptr + rb[:, None] * H + rj[None, :], c.to(c_ptr.dtype.element_ty), mask=mask)


def _rnn_block(size, knob):
    return min(knob, max(16, 1 << (max(int(size), 1) - 1).bit_length()))


_rnn_smem = 200 * 1024  # of the 227 KiB an sm_90 program may hold, some left for the compiler's own


def _rnn_stages(kind, bb, bh, bk, esize):
    """Software-pipeline depth of the hidden-to-hidden loop: every stage past the first keeps
    one slice of the state and of each gate's weights in shared memory (an LSTM at
    RNN_BLOCK_H=128 asked for 264 KiB at three stages)."""
    gates = (1, 1, 3, 4)[_rnn_modes[kind]]
    stage = (gates * bk * bh + bb * bk) * esize
    return 3 if 2 * stage <= _rnn_smem else 2 if stage <= _rnn_smem else 1


def _rnn_direction(kind, x, h0, c0, w_ih, w_hh, b_ih, b_hh, out, col, reverse):
    """One layer and direction over x [T, B, I], writing out[:, :, col:col + H]; returns
    (h_n, c_n) (c_n None but for the LSTM)."""
    steps, batch = x.shape[0], x.shape[1]
    hidden = w_hh.shape[1]
    flat = x.reshape(steps * batch, x.shape[2])
    # gemm.py's addmm and mm: a candidate that pastes this file pastes that one too
    gi = addmm(b_ih, flat, w_ih.t()) if b_ih is not None else mm(flat, w_ih.t())  # noqa: F821
    gi = gi.view(steps, batch, -1)
    h = h0.contiguous()
    c = c0.clone(memory_format=torch.contiguous_format) if c0 is not None else h  # written in turn
    c_next = torch.empty_like(c) if c0 is not None else h
    if b_hh is None:
        b_hh = torch.zeros(w_hh.shape[0], dtype=w_hh.dtype, device=w_hh.device)
    knobs = _rnn_cpu_blocks if x.device.type == "cpu" else (RNN_BLOCK_B, RNN_BLOCK_H, RNN_BLOCK_K)
    bb, bh, bk = (_rnn_block(batch, knobs[0]), _rnn_block(hidden, knobs[1]), _rnn_block(hidden, knobs[2]))
    precision = "ieee" if x.dtype == torch.float32 and not RNN_ALLOW_TF32 else "tf32"
    grid = (-(-batch // bb), -(-hidden // bh))
    stages = _rnn_stages(kind, bb, bh, bk, w_hh.element_size())
    if grid == (1, 1) and steps > 0:  # one program holds the state: the whole sequence at once
        dest = out[:, :, col:col + hidden]
        _rnn_seq_kernel[(1,)](gi, h, w_hh, b_hh, dest, c, batch, hidden, steps, gi.stride(0), gi.stride(1),
                              h.stride(0), out.stride(0), out.stride(1), REVERSE=reverse,
                              MODE=_rnn_modes[kind], PRECISION=precision, BLOCK_B=bb, BLOCK_H=bh,
                              BLOCK_K=bk, num_warps=RNN_SEQ_WARPS, num_stages=stages)
        return dest[0 if reverse else steps - 1], (c if c0 is not None else None)
    for step in range(steps):
        t = steps - 1 - step if reverse else step
        dest = out[t, :, col:col + hidden]
        _rnn_step_kernel[grid](gi[t], h, w_hh, b_hh, dest, c, c_next,
                               batch, hidden, gi.stride(1), h.stride(0), out.stride(1),
                               MODE=_rnn_modes[kind], PRECISION=precision,
                               BLOCK_B=bb, BLOCK_H=bh, BLOCK_K=bk, num_warps=RNN_NUM_WARPS,
                               num_stages=stages)
        h = dest
        c, c_next = c_next, c
    return h, (c if c0 is not None else None)


def _rnn_supported(kind, params, has_biases, num_layers, dropout, train, bidirectional, x):
    per = (4 if has_biases else 2) * (2 if bidirectional else 1)
    if len(params) != per * num_layers:  # LSTM projections add a weight per layer and direction
        return False
    if dropout and train and num_layers > 1:
        return False
    return x.dtype in (torch.float32, torch.float16, torch.bfloat16) and x.dim() == 3


def _rnn_run(kind, x, h0, c0, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    seq = x.transpose(0, 1) if batch_first else x
    hidden = params[1].shape[1]
    h_n, c_n = [], []
    for layer in range(num_layers):
        out = torch.empty((seq.shape[0], seq.shape[1], dirs * hidden), dtype=x.dtype, device=x.device)
        for d in range(dirs):
            w = params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            i = layer * dirs + d
            h, c = _rnn_direction(kind, seq, h0[i], None if c0 is None else c0[i], w[0], w[1], b_ih, b_hh,
                                  out, d * hidden, d == 1)
            h_n.append(h)
            c_n.append(c)
        seq = out
    out = seq.transpose(0, 1).contiguous() if batch_first else seq
    hs = torch.stack(h_n)
    return (out, hs, torch.stack(c_n)) if c0 is not None else (out, hs)


def _rnn_layer(kind, x, hx, params, flags):
    """The library's layer where it covers the call, else torch's (``flags``: has_biases,
    num_layers, dropout, train, bidirectional, batch_first)."""
    has_biases, num_layers, dropout, train, bidirectional, _ = flags
    if not _rnn_supported(kind, params, has_biases, num_layers, dropout, train, bidirectional, x):
        torch_layer = {"rnn_tanh": torch.rnn_tanh, "rnn_relu": torch.rnn_relu, "gru": torch.gru,
                       "lstm": torch.lstm}[kind]
        return torch_layer(x, list(hx) if kind == "lstm" else hx, params, *flags)
    h0, c0 = (hx[0], hx[1]) if kind == "lstm" else (hx, None)
    return _rnn_run(kind, x, h0, c0, params, *flags)


def rnn_tanh(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return _rnn_layer("rnn_tanh", x, hx, params, (has_biases, num_layers, dropout, train, bidirectional, batch_first))


def rnn_relu(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return _rnn_layer("rnn_relu", x, hx, params, (has_biases, num_layers, dropout, train, bidirectional, batch_first))


def gru(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return _rnn_layer("gru", x, hx, params, (has_biases, num_layers, dropout, train, bidirectional, batch_first))


def lstm(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    return _rnn_layer("lstm", x, hx, params, (has_biases, num_layers, dropout, train, bidirectional, batch_first))
