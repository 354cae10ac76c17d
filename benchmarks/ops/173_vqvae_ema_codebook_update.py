import torch
import torch.nn as nn


class Model(nn.Module):
    """A VQ-VAE vector quantiser with the exponential-moving-average codebook update (van den
    Oord et al. 2017, appendix; Sonnet's VectorQuantizerEMA, as in VQ-VAE-2 and Jukebox) in
    training mode, written functionally: the codebook state comes in as inputs and the updated
    state goes out as outputs (nothing is modified in place).

    Inputs, all fp32: z (batch, dim, height, width), the encoder output; codebook (codes, dim);
    ema_count (codes,), the running cluster sizes; ema_sum (codes, dim), the running sums of
    assigned vectors. The flattened vectors are f = z permuted to (batch, height, width, dim)
    and viewed as (N, dim), N = batch * height * width (row order b, h, w).

    Distances d[n, c] = sum f[n]^2 - 2 f[n] . codebook[c] + sum codebook[c]^2; the index of
    each vector is the argmin over codes (first on ties). counts[c] is the number of vectors
    with index c and sums[c] the sum of those vectors (0 where none). With decay and eps:
    new_count = decay * ema_count + (1 - decay) * counts;
    new_sum = decay * ema_sum + (1 - decay) * sums; with n = sum of new_count, the Laplace-
    smoothed sizes s = (new_count + eps) / (n + codes * eps) * n and new_codebook = new_sum /
    s[:, None]. The quantised vectors are the OLD codebook rows at the indices; the
    commitment loss is beta * mean((quantized - f)^2) over all elements; the straight-through
    output f + (quantized - f) is permuted back to (batch, dim, height, width). With
    avg = counts / N, perplexity = exp(-sum_c avg log(avg + 1e-10)).

    Returns quantized (batch, dim, height, width) fp32, indices (batch, height, width) int64,
    loss (0-d), perplexity (0-d), new_count (codes,), new_sum (codes, dim) and new_codebook
    (codes, dim), all fp32 except the indices."""
    def __init__(self, decay, eps, beta):
        super().__init__()
        self.decay, self.eps, self.beta = decay, eps, beta

    def forward(self, z, codebook, ema_count, ema_sum):
        b, d, h, w = z.shape
        codes = codebook.shape[0]
        f = z.permute(0, 2, 3, 1).reshape(-1, d)
        dist = (f * f).sum(1, keepdim=True) - 2.0 * (f @ codebook.t()) + (codebook * codebook).sum(1)
        idx = dist.argmin(dim=1)
        quantized = codebook.index_select(0, idx)
        counts = torch.bincount(idx, minlength=codes).to(f.dtype)
        sums = torch.zeros_like(codebook).index_add_(0, idx, f)
        new_count = self.decay * ema_count + (1.0 - self.decay) * counts
        new_sum = self.decay * ema_sum + (1.0 - self.decay) * sums
        n = new_count.sum()
        smoothed = (new_count + self.eps) / (n + codes * self.eps) * n
        new_codebook = new_sum / smoothed.unsqueeze(1)
        loss = self.beta * torch.mean((quantized.detach() - f) ** 2)
        st = f + (quantized - f).detach()
        avg = counts / f.shape[0]
        perplexity = torch.exp(-torch.sum(avg * torch.log(avg + 1e-10)))
        quantized_out = st.view(b, h, w, d).permute(0, 3, 1, 2)
        return quantized_out, idx.view(b, h, w), loss, perplexity, new_count, new_sum, new_codebook

batch = 16
dim = 64
height = 64
width = 64
codes = 1024
decay = 0.99
eps = 1e-5
beta = 0.25

def get_inputs():
    z = torch.randn(batch, dim, height, width)
    codebook = torch.randn(codes, dim)
    ema_count = torch.rand(codes) * 100.0
    ema_sum = codebook * ema_count.unsqueeze(1)
    return [z, codebook, ema_count, ema_sum]

def get_init_inputs():
    return [decay, eps, beta]
