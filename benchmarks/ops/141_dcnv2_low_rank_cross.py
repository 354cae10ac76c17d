import torch
import torch.nn as nn


class Model(nn.Module):
    """A DCN-v2 click-through-rate model (parallel structure, low-rank cross layers) on
    Criteo-like inputs. Hashed categorical ids (int64, -1 when missing) are reduced modulo
    each field's cardinality (torch.remainder against a buffer), missing ids sent by torch.where
    on the int tensor to a per-field extra row, and offset into one shared nn.Embedding by a
    buffer of exclusive cumulative table sizes (both buffers as long as the field count).
    Dense counts are clamped at 0 and log1p-transformed and concatenated with the flattened
    embeddings to x0. A Python loop over the cross layers applies x <- x0 * (U V x + b) + x by
    torch.addcmul; a ReLU MLP runs beside it on x0; both are concatenated into a logit.
    Returns the click probability and the logit."""
    def __init__(self, vocab, fields, embed_dim, n_dense, num_cross, rank, hidden):
        super().__init__()
        cards = torch.tensor([vocab // (i + 1) + 2 for i in range(fields)])
        self.register_buffer("cards", cards)
        self.register_buffer("offsets", torch.cumsum(cards + 1, dim=0) - (cards + 1))
        self.embedding = nn.Embedding(int((cards + 1).sum()), embed_dim)
        d = n_dense + fields * embed_dim
        self.down = nn.ModuleList([nn.Linear(d, rank, bias=False) for _ in range(num_cross)])
        self.up = nn.ModuleList([nn.Linear(rank, d) for _ in range(num_cross)])
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(d + hidden, 1)

    def forward(self, dense, ids):
        rows = torch.where(ids >= 0, torch.remainder(ids, self.cards), self.cards) + self.offsets
        emb = self.embedding(rows).flatten(1)
        x0 = torch.cat([torch.log1p(dense.clamp(min=0.0)), emb], dim=1)
        x = x0
        for down, up in zip(self.down, self.up, strict=True):
            x = torch.addcmul(x, x0, up(down(x)))
        logit = self.head(torch.cat([x, self.mlp(x0)], dim=1)).squeeze(-1)
        return torch.sigmoid(logit), logit

batch = 32768
vocab = 100000
fields = 26
embed_dim = 16
n_dense = 13
num_cross = 3
rank = 64
hidden = 512

def get_inputs():
    dense = torch.floor(torch.rand(batch, n_dense) ** 4 * 1000.0)
    dense = torch.where(torch.rand(batch, n_dense) < 0.02, -1.0, dense)
    ids = torch.randint(0, 2 ** 40, (batch, fields))
    ids = torch.where(torch.rand(batch, fields) < 0.05, -1, ids)
    return [dense, ids]

def get_init_inputs():
    return [vocab, fields, embed_dim, n_dense, num_cross, rank, hidden]
