import torch
import torch.nn as nn


class Model(nn.Module):
    """The soft-DTW divergence loss for time-series forecasting (Cuturi & Blondel 2017;
    Blondel et al. 2021), with a Sakoe-Chiba band, computed by the dynamic-programming
    recurrence as a Python loop over anti-diagonals (the wavefront order used by GPU soft-DTW
    implementations), all three soft-DTW terms of the divergence batched together.

    Inputs: pred and target (batch, seq_len, channels) fp32. For two series x, y (seq_len
    steps each) the cost is the squared Euclidean distance D[i, j] = max(0, |x_i|^2 + |y_j|^2
    - 2 x_i . y_j) (the max guards rounding). The table R, indexed 0..seq_len in both axes, has
    R[0, 0] = 0 and +inf on the rest of row 0 and column 0; for 1 <= i, j <= seq_len,
    R[i, j] = +inf when |i - j| > bandwidth, otherwise
        R[i, j] = D[i-1, j-1] + softmin(R[i-1, j-1], R[i-1, j], R[i, j-1]),
    with softmin(a, b, c) = -gamma * log(exp(-a / gamma) + exp(-b / gamma) + exp(-c / gamma))
    (computed as a logsumexp; +inf when all three are +inf). sdtw(x, y) = R[seq_len, seq_len].
    The cells of one anti-diagonal i + j = p depend only on the two previous ones, so p runs
    from 2 to 2 * seq_len and each step updates the whole in-band diagonal for all series at
    once. The divergence is sdtw(pred, target) - (sdtw(pred, pred) + sdtw(target, target)) / 2
    per sample; the loss is its mean over the batch.

    Returns loss (0-d fp32), divergence (batch,) fp32 and sdtw(pred, target) (batch,) fp32."""
    def __init__(self, gamma, bandwidth):
        super().__init__()
        self.gamma, self.bandwidth = gamma, bandwidth

    def forward(self, pred, target):
        b, n, _ = pred.shape
        x = torch.cat([pred, pred, target], dim=0)
        y = torch.cat([target, pred, target], dim=0)
        D = ((x * x).sum(-1, keepdim=True) + (y * y).sum(-1).unsqueeze(1)
             - 2.0 * torch.bmm(x, y.transpose(1, 2))).clamp(min=0.0)             # (3b, n, n)
        R = torch.full((3 * b, n + 1, n + 1), float("inf"), dtype=pred.dtype, device=pred.device)
        R[:, 0, 0] = 0.0
        g = self.gamma
        for p in range(2, 2 * n + 1):
            lo = max(1, p - n, (p - self.bandwidth + 1) // 2)
            hi = min(n, p - 1, (p + self.bandwidth) // 2)
            if lo > hi:
                continue
            ii = torch.arange(lo, hi + 1, device=pred.device)
            jj = p - ii
            prev = torch.stack([R[:, ii - 1, jj - 1], R[:, ii - 1, jj], R[:, ii, jj - 1]], dim=0)
            soft = -g * torch.logsumexp(-prev / g, dim=0)
            R[:, ii, jj] = D[:, ii - 1, jj - 1] + soft
        s = R[:, n, n]
        xy, xx, yy = s[:b], s[b:2 * b], s[2 * b:]
        div = xy - 0.5 * (xx + yy)
        return div.mean(), div, xy

batch = 64
seq_len = 512
channels = 8
gamma = 0.1
bandwidth = 64

def get_inputs():
    target = torch.cumsum(torch.randn(batch, seq_len, channels), dim=1) / seq_len ** 0.5
    pred = target + 0.3 * torch.randn(batch, seq_len, channels)
    return [pred, target]

def get_init_inputs():
    return [gamma, bandwidth]
