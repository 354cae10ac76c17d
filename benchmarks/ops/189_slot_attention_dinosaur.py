import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Slot Attention as the grouping module of an object-centric model on frozen ViT patch
    features (Locatello et al. 2020, as used by DINOSAUR 2023, VideoSAUR and SlotDiffusion):
    a fixed number of iterations in which slots compete for patches by a softmax over the
    SLOT axis, gather a weighted mean of the patches and are updated by a GRU cell and a
    residual MLP.

    Inputs: feats fp32 (batch, patches, in_dim), ViT patch features; noise fp32
    (batch, num_slots, slot_dim), standard normal draws for the slot initialisation.
    1. x = LayerNorm(feats) (learned affine, eps 1e-5); k = x Wk^T, v = x Wv^T
       (batch, patches, slot_dim), bias-free.
    2. slots = mu + exp(log_sigma) * noise, mu and log_sigma learned (slot_dim,) vectors.
    3. Repeated iters times (fixed at construction):
       prev = slots; q = LayerNorm(slots) Wq^T (bias-free);
       logits = q k^T * slot_dim^-0.5 (batch, num_slots, patches);
       attn = softmax over the slot axis (dim 1); w = attn + 1e-8, then w divided by its sum
       over patches; updates = w v (batch, num_slots, slot_dim);
       slots = GRUCell(updates, prev) (torch.nn.GRUCell: reset, update, new gates, with
       biases), applied to (batch * num_slots, slot_dim) rows;
       slots = slots + MLP(LayerNorm(slots)), MLP = Linear(slot_dim, mlp_hidden), ReLU,
       Linear(mlp_hidden, slot_dim).
    Returns slots fp32 (batch, num_slots, slot_dim) and attn fp32 (batch, num_slots, patches),
    the softmax over slots of the last iteration (the per-patch object masks)."""
    def __init__(self, in_dim, slot_dim, num_slots, iters, mlp_hidden):
        super().__init__()
        self.num_slots, self.iters, self.slot_dim = num_slots, iters, slot_dim
        self.scale = slot_dim ** -0.5
        self.norm_input = nn.LayerNorm(in_dim)
        self.norm_slots = nn.LayerNorm(slot_dim)
        self.norm_mlp = nn.LayerNorm(slot_dim)
        self.to_q = nn.Linear(slot_dim, slot_dim, bias=False)
        self.to_k = nn.Linear(in_dim, slot_dim, bias=False)
        self.to_v = nn.Linear(in_dim, slot_dim, bias=False)
        self.gru = nn.GRUCell(slot_dim, slot_dim)
        self.mlp = nn.Sequential(nn.Linear(slot_dim, mlp_hidden), nn.ReLU(),
                                 nn.Linear(mlp_hidden, slot_dim))
        self.slots_mu = nn.Parameter(torch.randn(slot_dim) * 0.5)
        self.slots_log_sigma = nn.Parameter(torch.full((slot_dim,), -1.0) + 0.1 * torch.randn(slot_dim))
        self.eps = 1e-8
        with torch.no_grad():                    # trained slot attention is far from uniform
            self.to_q.weight.mul_(4.0)
            self.to_k.weight.mul_(4.0)

    def forward(self, feats, noise):
        b, n, _ = feats.shape
        x = self.norm_input(feats)
        k = self.to_k(x)
        v = self.to_v(x)
        slots = self.slots_mu + torch.exp(self.slots_log_sigma) * noise
        attn = None
        for _ in range(self.iters):
            prev = slots
            q = self.to_q(self.norm_slots(slots))
            logits = torch.einsum("bid,bjd->bij", q, k) * self.scale
            attn = logits.softmax(dim=1)
            w = attn + self.eps
            w = w / w.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bij,bjd->bid", w, v)
            slots = self.gru(updates.reshape(-1, self.slot_dim), prev.reshape(-1, self.slot_dim))
            slots = slots.view(b, -1, self.slot_dim)
            slots = slots + self.mlp(self.norm_mlp(slots))
        return slots, attn

batch = 16
patches = 784
in_dim = 768
slot_dim = 256
num_slots = 7
iters = 3
mlp_hidden = 1024

def get_inputs():
    # DINO-like features: a few object prototypes over a spatial layout, plus noise
    protos = torch.randn(batch, 6, in_dim) * 2.0
    assign = torch.randint(0, 6, (batch, patches))
    feats = protos.gather(1, assign.unsqueeze(-1).expand(-1, -1, in_dim))
    feats = feats + torch.randn(batch, patches, in_dim)
    noise = torch.randn(batch, num_slots, slot_dim)
    return [feats, noise]

def get_init_inputs():
    return [in_dim, slot_dim, num_slots, iters, mlp_hidden]
