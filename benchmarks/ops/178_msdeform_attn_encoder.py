import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A Deformable DETR encoder layer (multi-scale deformable attention, Zhu et al. 2021; the
    pure-PyTorch ms_deform_attn_core_pytorch path also used by DINO, Mask2Former's pixel decoder
    and RT-DETR), over a padded batch of multi-scale feature maps.

    Inputs: src fp32 (batch, tokens, d_model), the levels' feature maps flattened row-major and
    concatenated level after level; pos fp32 (batch, tokens, d_model) their position plus level
    embeddings; padding_mask bool (batch, tokens), True at padded positions. The level shapes
    (H_l, W_l) are a constructor argument; tokens = sum of H_l * W_l.
    1. Valid ratios: for each level, the mask segment viewed (batch, H_l, W_l); valid_h = number
       of False in column 0, valid_w = number of False in row 0; ratio = (valid_w / W_l,
       valid_h / H_l) (batch, levels, 2).
    2. Reference points: per level, y = linspace(0.5, H_l - 0.5, H_l) and x = linspace(0.5, W_l
       - 0.5, W_l) by meshgrid (indexing "ij"), flattened; ref = (x / (ratio_x,l * W_l), y /
       (ratio_y,l * H_l)) per image; levels concatenated to (batch, tokens, 2) and multiplied
       by every level's ratio: ref_pts (batch, tokens, levels, 2).
    3. query = src + pos. value = value_proj(src) with padded tokens set to 0, viewed (batch,
       tokens, heads, d_head). offsets = sampling_offsets(query) viewed (batch, tokens, heads,
       levels, points, 2); attn = softmax over levels * points of attention_weights(query)
       viewed (batch, tokens, heads, levels * points). loc = ref_pts[:, :, None, :, None, :] +
       offsets / (W_l, H_l) of the level.
    4. Per level l: the value segment of that level as (batch * heads, d_head, H_l, W_l);
       F.grid_sample (bilinear, padding zeros, align_corners False) at grid 2 * loc - 1 of that
       level, arranged (batch * heads, tokens, points, 2), giving (batch * heads, d_head, tokens,
       points). The levels' samples are stacked and flattened to levels * points, multiplied by
       attn (levels * points in the same order) and summed: (batch, tokens, heads * d_head).
    5. attn_out = output_proj(that); x = LayerNorm1(src + attn_out); then the FFN: x =
       LayerNorm2(x + linear2(ReLU(linear1(x)))) (both LayerNorms eps 1e-5, no dropout).
    sampling_offsets gets Deformable DETR's bias (head h points at angle 2 pi h / heads, point p
    at p + 1 times that unit, scaled so the larger component is 1); other layers keep their
    default initialisation. Returns x (batch, tokens, d_model)."""
    def __init__(self, d_model, heads, points, ffn_dim, spatial_shapes):
        super().__init__()
        self.heads, self.points = heads, points
        self.shapes = [tuple(s) for s in spatial_shapes]
        self.levels = len(self.shapes)
        self.d_head = d_model // heads
        self.sampling_offsets = nn.Linear(d_model, heads * self.levels * points * 2)
        self.attention_weights = nn.Linear(d_model, heads * self.levels * points)
        self.value_proj = nn.Linear(d_model, d_model)
        self.output_proj = nn.Linear(d_model, d_model)
        thetas = torch.arange(heads, dtype=torch.float32) * (2.0 * math.pi / heads)
        grid = torch.stack([thetas.cos(), thetas.sin()], -1)
        grid = (grid / grid.abs().max(-1, keepdim=True)[0]).view(heads, 1, 1, 2).repeat(1, self.levels, points, 1)
        grid = grid * torch.arange(1, points + 1, dtype=torch.float32).view(1, 1, points, 1)
        with torch.no_grad():
            self.sampling_offsets.bias.copy_(grid.view(-1))
        self.norm1 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, ffn_dim)
        self.linear2 = nn.Linear(ffn_dim, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.register_buffer("normalizer", torch.tensor([[w, h] for h, w in self.shapes], dtype=torch.float32))

    def forward(self, src, pos, padding_mask):
        b, n, c = src.shape
        m, L, P, dh = self.heads, self.levels, self.points, self.d_head
        sizes = [h * w for h, w in self.shapes]
        ratios, refs = [], []
        for seg, (h, w) in zip(padding_mask.split(sizes, dim=1), self.shapes):
            valid = ~seg.view(b, h, w)
            ratios.append(torch.stack([valid[:, 0, :].sum(1).float() / w, valid[:, :, 0].sum(1).float() / h], -1))
        ratios = torch.stack(ratios, 1)                                          # (b, L, 2)
        for lvl, (h, w) in enumerate(self.shapes):
            ys = torch.linspace(0.5, h - 0.5, h, device=src.device)
            xs = torch.linspace(0.5, w - 0.5, w, device=src.device)
            ry, rx = torch.meshgrid(ys, xs, indexing="ij")
            ry = ry.reshape(1, -1) / (ratios[:, lvl, 1:2] * h)
            rx = rx.reshape(1, -1) / (ratios[:, lvl, 0:1] * w)
            refs.append(torch.stack((rx, ry), -1))
        ref = torch.cat(refs, 1)[:, :, None] * ratios[:, None]                   # (b, n, L, 2)

        query = src + pos
        value = self.value_proj(src).masked_fill(padding_mask[..., None], 0.0).view(b, n, m, dh)
        offsets = self.sampling_offsets(query).view(b, n, m, L, P, 2)
        attn = self.attention_weights(query).view(b, n, m, L * P).softmax(-1)
        loc = ref[:, :, None, :, None, :] + offsets / self.normalizer[None, None, None, :, None, :]
        grids = 2 * loc - 1
        sampled = []
        for lvl, (val, (h, w)) in enumerate(zip(value.split(sizes, dim=1), self.shapes)):
            val = val.flatten(2).transpose(1, 2).reshape(b * m, dh, h, w)
            g = grids[:, :, :, lvl].transpose(1, 2).flatten(0, 1)                # (b*m, n, P, 2)
            sampled.append(F.grid_sample(val, g, mode="bilinear", padding_mode="zeros", align_corners=False))
        attn = attn.transpose(1, 2).reshape(b * m, 1, n, L * P)
        out = (torch.stack(sampled, dim=-2).flatten(-2) * attn).sum(-1).view(b, m * dh, n).transpose(1, 2)
        x = self.norm1(src + self.output_proj(out))
        return self.norm2(x + self.linear2(F.relu(self.linear1(x))))

batch = 4
d_model = 256
heads = 8
points = 4
ffn_dim = 1024
spatial_shapes = [(100, 134), (50, 67), (25, 34), (13, 17)]   # strides 8, 16, 32, 64 of an 800 x 1072 canvas

def get_inputs():
    tokens = sum(h * w for h, w in spatial_shapes)
    src = torch.randn(batch, tokens, d_model)
    pos = torch.randn(batch, tokens, d_model) * 0.5
    canvas_h, canvas_w = 800, 1072
    sizes = [(800, 1066), (800, 600), (600, 1072), (704, 950), (512, 680), (768, 1024)]
    img = torch.ones(batch, 1, canvas_h, canvas_w)
    for i in range(batch):
        h, w = sizes[i % len(sizes)]
        img[i, :, :h, :w] = 0.0
    masks = [F.interpolate(img, size=s).view(batch, -1) > 0.5 for s in spatial_shapes]
    return [src, pos, torch.cat(masks, 1)]

def get_init_inputs():
    return [d_model, heads, points, ffn_dim, spatial_shapes]
