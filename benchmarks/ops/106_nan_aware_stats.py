import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-row statistics of sensor data with missing values (NaN): nanmean, nansum, the count
    of present values, and the rows with NaNs replaced by their row's nanmean."""
    def __init__(self):
        super().__init__()

    def forward(self, x):
        mean = torch.nanmean(x, dim=-1, keepdim=True)
        total = torch.nansum(x, dim=-1)
        count = (~torch.isnan(x)).sum(-1)
        filled = torch.where(torch.isnan(x), mean, x)
        return mean.squeeze(-1), total, count, filled

rows = 8192
cols = 1024

def get_inputs():
    x = torch.randn(rows, cols)
    x[torch.rand(rows, cols) < 0.1] = float("nan")
    return [x]

def get_init_inputs():
    return []
