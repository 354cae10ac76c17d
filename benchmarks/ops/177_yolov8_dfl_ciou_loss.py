import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """The YOLOv8 detection loss after target assignment (ultralytics' v8DetectionLoss and
    BboxLoss): anchor points from meshgrids, distribution-focal-loss box decoding, CIoU, the
    DFL term and BCE classification, with the task-aligned targets given.

    Inputs, all for an input image of img_size x img_size and levels of stride 8, 16, 32:
    p3, p4, p5 fp32 (batch, 4 * reg_max + classes, img_size / s, img_size / s), the raw head
    outputs; target_bboxes fp32 (batch, anchors, 4) assigned boxes in pixels (x1, y1, x2, y2);
    target_scores fp32 (batch, anchors, classes) the task-aligned soft targets (zero rows for
    background); fg_mask bool (batch, anchors). anchors = sum over levels of (img_size / s)^2.
    Steps:
    1. Each level is viewed (batch, no, h * w); the three are concatenated along the last dim,
       split into reg_max * 4 distribution logits and classes class logits and permuted to
       pred_dist (batch, anchors, 4 * reg_max), pred_scores (batch, anchors, classes).
    2. Anchors: per level, x = arange(w) + 0.5 and y = arange(h) + 0.5 combined by
       meshgrid(y, x, indexing="ij"), anchor = (x, y) flattened row-major, in grid units, and a
       stride column of the same length; levels concatenated in order.
    3. Decoding: pred_dist viewed (batch, anchors, 4, reg_max), softmax over the last dim, the
       expectation against arange(reg_max) gives (l, t, r, b) distances; pred_boxes =
       (ax - l, ay - t, ax + r, ay + b) in grid units. target_bboxes are divided by the stride.
    4. weight = target_scores.sum(-1) (batch, anchors); norm = max(target_scores.sum(), 1).
    5. CIoU (eps = 1e-7) between pred_boxes and the scaled targets, per anchor: w = x2 - x1,
       h = y2 - y1 + eps for each box; inter = clamp(min(x2) - max(x1), 0) * clamp(min(y2) -
       max(y1), 0); union = w1 h1 + w2 h2 - inter + eps; iou = inter / union; the enclosing box
       has cw = max(x2) - min(x1), ch = max(y2) - min(y1), c2 = cw^2 + ch^2 + eps; rho2 = ((x1'
       + x2' - x1 - x2)^2 + (y1' + y2' - y1 - y2)^2) / 4 (primes: target); v = 4 / pi^2 *
       (atan(w2 / h2) - atan(w1 / h1))^2; alpha = v / (v - iou + 1 + eps); ciou = iou - (rho2
       / c2 + v * alpha). loss_box = sum over foreground anchors of (1 - ciou) * weight / norm.
    6. DFL: target distances (ax - x1', ay - y1', x2' - ax, y2' - ay) clamped to [0, reg_max -
       1.01]; tl = floor (long), tr = tl + 1, wl = tr - target, wr = 1 - wl; per side,
       CE(logits, tl) * wl + CE(logits, tr) * wr (cross-entropy of the reg_max logits of that
       side), averaged over the four sides; loss_dfl = sum over foreground anchors of that times
       weight / norm.
    7. loss_cls = BCE-with-logits(pred_scores, target_scores) summed over everything / norm.
    Foreground selection is done by multiplying by fg_mask (no boolean indexing).
    Returns the loss vector (3,) = (7.5 loss_box, 0.5 loss_cls, 1.5 loss_dfl) and the decoded
    boxes in pixels, pred_boxes * stride, (batch, anchors, 4)."""
    def __init__(self, classes, reg_max, img_size):
        super().__init__()
        self.classes, self.reg_max = classes, reg_max
        self.strides = (8, 16, 32)
        self.sizes = tuple(img_size // s for s in self.strides)
        self.register_buffer("proj", torch.arange(reg_max, dtype=torch.float32))
        self.gains = (7.5, 0.5, 1.5)

    def _anchors(self, device):
        points, strides = [], []
        for s, n in zip(self.strides, self.sizes):
            x = torch.arange(n, device=device, dtype=torch.float32) + 0.5
            y = torch.arange(n, device=device, dtype=torch.float32) + 0.5
            yy, xx = torch.meshgrid(y, x, indexing="ij")
            points.append(torch.stack((xx, yy), -1).view(-1, 2))
            strides.append(torch.full((n * n, 1), float(s), device=device))
        return torch.cat(points), torch.cat(strides)

    @staticmethod
    def _ciou(b1, b2, eps=1e-7):
        b1_x1, b1_y1, b1_x2, b1_y2 = b1.unbind(-1)
        b2_x1, b2_y1, b2_x2, b2_y2 = b2.unbind(-1)
        w1, h1 = b1_x2 - b1_x1, b1_y2 - b1_y1 + eps
        w2, h2 = b2_x2 - b2_x1, b2_y2 - b2_y1 + eps
        inter = (torch.minimum(b1_x2, b2_x2) - torch.maximum(b1_x1, b2_x1)).clamp(min=0) * \
                (torch.minimum(b1_y2, b2_y2) - torch.maximum(b1_y1, b2_y1)).clamp(min=0)
        union = w1 * h1 + w2 * h2 - inter + eps
        iou = inter / union
        cw = torch.maximum(b1_x2, b2_x2) - torch.minimum(b1_x1, b2_x1)
        ch = torch.maximum(b1_y2, b2_y2) - torch.minimum(b1_y1, b2_y1)
        c2 = cw * cw + ch * ch + eps
        rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2) ** 2 + (b2_y1 + b2_y2 - b1_y1 - b1_y2) ** 2) / 4
        v = (4 / math.pi ** 2) * (torch.atan(w2 / h2) - torch.atan(w1 / h1)) ** 2
        alpha = v / (v - iou + (1 + eps))
        return iou - (rho2 / c2 + v * alpha)

    def forward(self, p3, p4, p5, target_bboxes, target_scores, fg_mask):
        b = p3.shape[0]
        no = 4 * self.reg_max + self.classes
        feats = torch.cat([p.view(b, no, -1) for p in (p3, p4, p5)], dim=2)
        pred_dist, pred_scores = feats.split((4 * self.reg_max, self.classes), dim=1)
        pred_dist = pred_dist.permute(0, 2, 1).contiguous()
        pred_scores = pred_scores.permute(0, 2, 1).contiguous()
        a = pred_dist.shape[1]
        anchors, stride = self._anchors(p3.device)                      # (a, 2), (a, 1)

        dist = pred_dist.view(b, a, 4, self.reg_max).softmax(3).matmul(self.proj)
        lt, rb = dist.chunk(2, -1)
        pred_boxes = torch.cat((anchors - lt, anchors + rb), -1)         # grid units
        tboxes = target_bboxes / stride

        fg = fg_mask.float()
        weight = target_scores.sum(-1) * fg
        norm = target_scores.sum().clamp(min=1.0)

        ciou = self._ciou(pred_boxes, tboxes)
        loss_box = ((1.0 - ciou) * weight).sum() / norm

        t_lt = anchors - tboxes[..., :2]
        t_rb = tboxes[..., 2:] - anchors
        target = torch.cat((t_lt, t_rb), -1).clamp(0, self.reg_max - 1 - 0.01)
        tl = target.long()
        tr = tl + 1
        wl = tr - target
        wr = 1 - wl
        logits = pred_dist.view(-1, self.reg_max)
        ce_l = F.cross_entropy(logits, tl.view(-1), reduction="none").view(tl.shape)
        ce_r = F.cross_entropy(logits, tr.view(-1), reduction="none").view(tl.shape)
        dfl = (ce_l * wl + ce_r * wr).mean(-1)
        loss_dfl = (dfl * weight).sum() / norm

        loss_cls = F.binary_cross_entropy_with_logits(pred_scores, target_scores, reduction="sum") / norm

        loss = torch.stack((loss_box * self.gains[0], loss_cls * self.gains[1], loss_dfl * self.gains[2]))
        return loss, pred_boxes * stride

batch = 32
classes = 80
reg_max = 16
img_size = 640

def get_inputs():
    no = 4 * reg_max + classes
    sizes = [img_size // s for s in (8, 16, 32)]
    feats = [torch.randn(batch, no, n, n) for n in sizes]
    for f in feats:
        f[:, 4 * reg_max:] -= 4.0                                        # class logits near a low prior
    pts, strd = [], []
    for s, n in zip((8, 16, 32), sizes):
        yy, xx = torch.meshgrid(torch.arange(n) + 0.5, torch.arange(n) + 0.5, indexing="ij")
        pts.append(torch.stack((xx, yy), -1).view(-1, 2) * s)
        strd.append(torch.full((n * n, 1), float(s)))
    centers = torch.cat(pts)                                             # pixels
    strd = torch.cat(strd)
    a = centers.shape[0]
    # boxes containing their anchor: extents of 1-12 strides on each side
    ext = (torch.rand(batch, a, 4) * 11.0 + 1.0) * strd
    boxes = torch.cat((centers - ext[..., :2], centers + ext[..., 2:]), -1).clamp(0, img_size)
    fg = torch.rand(batch, a) < 0.05
    cls = torch.randint(0, classes, (batch, a))
    align = torch.rand(batch, a) * fg
    scores = torch.zeros(batch, a, classes).scatter_(2, cls.unsqueeze(-1), align.unsqueeze(-1))
    boxes = boxes * fg.unsqueeze(-1)
    return feats + [boxes, scores, fg]

def get_init_inputs():
    return [classes, reg_max, img_size]
