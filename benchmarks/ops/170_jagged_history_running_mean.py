import torch
import torch.nn as nn


class Model(nn.Module):
    """Jagged (ragged) user histories in a sequential recommender, in the style of torchrec /
    fbgemm's jagged-tensor ops: the histories of all users are packed into one flat tensor of
    item ids, with an offsets tensor (CSR form) giving where each user's history starts.

    Inputs: item_ids (total,) int64 in [0, num_items) and offsets (users + 1,) int64,
    non-decreasing, offsets[0] = 0, offsets[users] = total; user u owns the events
    offsets[u] .. offsets[u+1] - 1 (possibly none), and no history is longer than max_len.
    The parameter is an item embedding table (num_items, dim) fp32.

    For every event e of user u, pos[e] = e - offsets[u] is its position in the history and
    its embedding is x[e] = table[item_ids[e]]. The running mean at event e is the mean of
    x over the events of the same user at positions 0..pos[e] (inclusive), i.e. a cumulative
    sum restarted at each user's first event, divided by pos[e] + 1. padded (users, max_len,
    dim) is the jagged-to-padded-dense form of x: padded[u, p] = x[offsets[u] + p] for
    p < length[u], 0 elsewhere; mask (users, max_len) bool is p < length[u]. user_mean (users,
    dim) is the mean of x over each user's whole history, 0 for a user with no events.

    Returns running_mean (total, dim) fp32, pos (total,) int64, padded (users, max_len, dim)
    fp32, mask (users, max_len) bool and user_mean (users, dim) fp32."""
    def __init__(self, num_items, dim, max_len):
        super().__init__()
        self.table = nn.Parameter(torch.randn(num_items, dim) * dim ** -0.5)
        self.max_len = max_len

    def forward(self, item_ids, offsets):
        users = offsets.shape[0] - 1
        total = item_ids.shape[0]
        dim = self.table.shape[1]
        lengths = offsets[1:] - offsets[:-1]
        seg = torch.repeat_interleave(torch.arange(users, device=offsets.device), lengths,
                                      output_size=total)
        pos = torch.arange(total, device=offsets.device) - offsets[:-1][seg]
        x = torch.nn.functional.embedding(item_ids, self.table)                    # (total, dim)
        padded = x.new_zeros(users, self.max_len, dim)
        padded[seg, pos] = x
        mask = torch.arange(self.max_len, device=offsets.device).unsqueeze(0) < lengths.unsqueeze(1)
        csum = padded.cumsum(dim=1)
        running_mean = csum[seg, pos] / (pos + 1).unsqueeze(-1).to(x.dtype)
        user_mean = padded.sum(dim=1) / lengths.clamp(min=1).unsqueeze(-1).to(x.dtype)
        return running_mean, pos, padded, mask, user_mean

users = 2048
max_len = 256
total = users * max_len // 2
num_items = 500_000
dim = 64

def get_inputs():
    # lengths in [0, max_len] summing to exactly `total`: pairs around max_len / 2
    half = max_len // 2
    d = torch.randint(-half, half + 1, (users // 2,))
    lengths = torch.cat([half + d, half - d])[torch.randperm(users)]
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lengths, 0)])
    item_ids = torch.randint(0, num_items, (total,))
    return [item_ids, offsets]

def get_init_inputs():
    return [num_items, dim, max_len]
