import torch
import torch.nn as nn


class Model(nn.Module):
    """A TopK sparse autoencoder training step's forward (Gao et al. 2024, "Scaling and
    evaluating sparse autoencoders"), on bf16 residual-stream activations of a language model,
    with the AuxK loss that revives dead latents.

    Inputs: x (tokens, d_model) bf16 and dead (n_latents,) bool, the latents that have not
    fired for a long time. Parameters, all fp32: pre_bias (d_model,), W_enc (d_model,
    n_latents), latent_bias (n_latents,) and W_dec (n_latents, d_model) (rows of unit norm
    at init). All arithmetic is fp32 (xf = x as fp32).

    pre = (xf - pre_bias) @ W_enc + latent_bias. The k largest entries of each row of pre
    (torch.topk order: descending) give indices idx and values vals = relu(top values); the
    sparse code z is zero except z[i, idx[i, j]] = vals[i, j]; recon = z @ W_dec + pre_bias.
    The reconstruction loss is the normalised MSE, the mean over tokens of
    sum_d (recon - xf)^2 / sum_d xf^2. AuxK: the aux_k largest entries of each row of pre
    among the dead latents only (the others masked to -inf before topk; there are always at
    least aux_k dead latents) give, after relu, a second sparse code z_aux; aux_recon =
    z_aux @ W_dec (no bias) and, with the residual e = xf - recon, aux_loss is the mean over
    tokens of sum_d (aux_recon - e)^2 / sum_d e^2. loss = recon_loss + aux_coef * aux_loss.
    fires (n_latents,) int64 counts, for each latent, the (token, j) pairs with idx = that
    latent and vals > 0.

    Returns recon (tokens, d_model) bf16, idx (tokens, k) int64, vals (tokens, k) fp32, loss
    (0-d fp32), aux_loss (0-d fp32) and fires (n_latents,) int64."""
    def __init__(self, d_model, n_latents, k, aux_k, aux_coef):
        super().__init__()
        self.k, self.aux_k, self.aux_coef = k, aux_k, aux_coef
        w = torch.randn(d_model, n_latents)
        w = w / w.norm(dim=0, keepdim=True)
        self.pre_bias = nn.Parameter(torch.randn(d_model) * 0.1)
        self.W_enc = nn.Parameter(w.clone())
        self.latent_bias = nn.Parameter(torch.randn(n_latents) * 0.01)
        self.W_dec = nn.Parameter(w.t().contiguous())

    @staticmethod
    def _nmse(pred, target):
        return ((pred - target) ** 2).sum(-1).div((target ** 2).sum(-1)).mean()

    def forward(self, x, dead):
        xf = x.float()
        pre = (xf - self.pre_bias) @ self.W_enc + self.latent_bias            # (tokens, n_latents)
        top, idx = torch.topk(pre, self.k, dim=-1)
        vals = torch.relu(top)
        z = torch.zeros_like(pre).scatter_(-1, idx, vals)
        recon = z @ self.W_dec + self.pre_bias
        recon_loss = self._nmse(recon, xf)
        aux_top, aux_idx = torch.topk(pre.masked_fill(~dead, float("-inf")), self.aux_k, dim=-1)
        z_aux = torch.zeros_like(pre).scatter_(-1, aux_idx, torch.relu(aux_top))
        aux_recon = z_aux @ self.W_dec
        aux_loss = self._nmse(aux_recon, (xf - recon).detach())
        fires = torch.zeros(pre.shape[-1], dtype=torch.int64, device=x.device)
        fires.index_add_(0, idx.flatten(), (vals > 0).flatten().to(torch.int64))
        loss = recon_loss + self.aux_coef * aux_loss
        return recon.to(x.dtype), idx, vals, loss, aux_loss, fires

tokens = 2048
d_model = 768
n_latents = 16384
k = 32
aux_k = 256
aux_coef = 1.0 / 32

def get_inputs():
    x = (torch.randn(tokens, d_model) * 2.0 + torch.randn(d_model)).to(torch.bfloat16)
    dead = torch.rand(n_latents) < 0.2
    dead[:aux_k] = True
    return [x, dead]

def get_init_inputs():
    return [d_model, n_latents, k, aux_k, aux_coef]
