import torch
import torch.nn as nn


class Model(nn.Module):
    """Training targets of a two-stage detector's box head (Faster R-CNN style): the IoU of each
    image's proposals with its padded ground-truth boxes by broadcasting (B, A, 1, 2) against
    (B, 1, G, 2), padding boxes masked to -1 with masked_fill, the best box per proposal (max
    with indices), low-quality matches (each box's best proposals kept positive), labels from
    nested torch.where (class if IoU >= pos_thresh, background 0 below neg_thresh, -1 ignored
    between) and the matched boxes gathered and encoded as (dx, dy, log dw, log dh) divided by
    a buffer of standard deviations, zero where not positive. Returns labels (int64),
    regression targets and the best IoU (-1 in an image without boxes)."""
    def __init__(self, pos_thresh, neg_thresh):
        super().__init__()
        self.pos_thresh = pos_thresh
        self.neg_thresh = neg_thresh
        self.register_buffer("stds", torch.tensor([0.1, 0.1, 0.2, 0.2]))

    def forward(self, proposals, gt_boxes, gt_labels, gt_valid):
        p, g = proposals, gt_boxes
        area_p = (p[..., 2] - p[..., 0]) * (p[..., 3] - p[..., 1])
        area_g = (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1])
        lt = torch.maximum(p[:, :, None, :2], g[:, None, :, :2])
        rb = torch.minimum(p[:, :, None, 2:], g[:, None, :, 2:])
        wh = (rb - lt).clamp(min=0)
        inter = wh[..., 0] * wh[..., 1]
        iou = inter / (area_p[:, :, None] + area_g[:, None, :] - inter)
        iou = iou.masked_fill(~gt_valid[:, None, :], -1.0)
        best, idx = iou.max(dim=2)
        gt_best = iou.amax(dim=1, keepdim=True)
        low_quality = ((iou == gt_best) & gt_valid[:, None, :] & (gt_best > 0)).any(dim=2)
        positive = (best >= self.pos_thresh) | low_quality
        matched_label = torch.take_along_dim(gt_labels, idx, dim=1)
        labels = torch.where(positive, matched_label, torch.where(best < self.neg_thresh, 0, -1))
        m = torch.gather(g, 1, idx.unsqueeze(-1).expand(-1, -1, 4))
        pw, ph = p[..., 2] - p[..., 0], p[..., 3] - p[..., 1]
        mw, mh = m[..., 2] - m[..., 0], m[..., 3] - m[..., 1]
        deltas = torch.stack([
            ((m[..., 0] + m[..., 2]) - (p[..., 0] + p[..., 2])) * 0.5 / pw,
            ((m[..., 1] + m[..., 3]) - (p[..., 1] + p[..., 3])) * 0.5 / ph,
            torch.log(mw / pw),
            torch.log(mh / ph),
        ], dim=-1) / self.stds
        targets = torch.where(positive.unsqueeze(-1), deltas, 0.0)
        return labels, targets, best

batch = 16
proposals = 32768
boxes = 50
num_classes = 80
image_size = 1024.0
pos_thresh = 0.5
neg_thresh = 0.4

def _boxes(center, size):
    return torch.cat([center - size / 2, center + size / 2], dim=-1)

def get_inputs():
    gt = _boxes(torch.rand(batch, boxes, 2) * image_size, torch.rand(batch, boxes, 2) * 240 + 16)
    pick = torch.randint(0, boxes, (batch, proposals))
    near = torch.gather(gt, 1, pick.unsqueeze(-1).expand(-1, -1, 4))
    size = torch.cat([near[..., 2:] - near[..., :2]] * 2, dim=-1)
    near = near + torch.randn(batch, proposals, 4) * 0.15 * size
    near = torch.cat([torch.minimum(near[..., :2], near[..., 2:] - 1), torch.maximum(near[..., 2:], near[..., :2] + 1)], -1)
    far = _boxes(torch.rand(batch, proposals, 2) * image_size, torch.rand(batch, proposals, 2) * 240 + 16)
    props = torch.where(torch.rand(batch, proposals, 1) < 0.5, near, far)
    labels = torch.randint(1, num_classes, (batch, boxes))
    count = torch.randint(1, boxes + 1, (batch,))
    valid = torch.arange(boxes)[None, :] < count[:, None]
    valid[-1] = False  # one image with no boxes at all
    return [props, gt, labels, valid]

def get_init_inputs():
    return [pos_thresh, neg_thresh]
