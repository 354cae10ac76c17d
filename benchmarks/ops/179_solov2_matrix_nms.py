import torch
import torch.nn as nn


class Model(nn.Module):
    """SOLOv2's instance-mask post-processing with Matrix NMS (Wang et al. 2020; mmdet's
    SOLOV2Head.get_results / matrix_nms), batched over images with fixed shapes: masks that
    the original would drop get score 0 instead.

    Inputs: seg_preds fp16 (batch, candidates, height, width), the sigmoid mask probabilities
    of the candidates that passed the category-score threshold; cate_scores fp32 (batch,
    candidates); cate_labels int64 (batch, candidates). Steps, per image:
    1. masks = seg_preds > mask_thr; area = masks summed over (height, width), as fp32.
    2. Mask scoring: seg_score = sum(seg_preds.float() * masks) / max(area, 1); score =
       cate_scores * seg_score, set to 0 where area <= min_area.
    3. Sort the scores in descending order with a stable sort (ties keep their index order) and
       keep the first nms_pre: their scores, labels, areas and masks (as fp32, flattened to
       height * width), in that order.
    4. Matrix NMS over those nms_pre masks: inter = M M^T (a batched matrix product); iou[i, j]
       = inter[i, j] / max(area_i + area_j - inter[i, j], 1), keeping only j > i (strict upper
       triangle, zero elsewhere); same[i, j] = (label_i == label_j), upper triangle likewise;
       d = iou * same. comp[i] = max over rows k of d[k, i] (column max: the largest IoU of
       mask i with a higher-scored mask of its class). decay[i, j] = exp(-sigma d[i, j]^2) /
       exp(-sigma comp[i]^2); coefficient[j] = min over i of decay[i, j]; new_score = score *
       coefficient.
    5. new_score is set to 0 where it is below update_thr; a stable descending sort keeps the
       first max_per_img.
    Returns scores fp32 (batch, max_per_img), labels int64 (batch, max_per_img) and masks bool
    (batch, max_per_img, height, width), in the final order."""
    def __init__(self, mask_thr, min_area, nms_pre, sigma, update_thr, max_per_img):
        super().__init__()
        self.mask_thr, self.min_area, self.nms_pre = mask_thr, min_area, nms_pre
        self.sigma, self.update_thr, self.max_per_img = sigma, update_thr, max_per_img

    def forward(self, seg_preds, cate_scores, cate_labels):
        b, n, h, w = seg_preds.shape
        masks = seg_preds > self.mask_thr
        area = masks.sum((2, 3)).float()
        seg_score = (seg_preds.float() * masks).sum((2, 3)) / area.clamp(min=1.0)
        scores = cate_scores * seg_score
        scores = torch.where(area > self.min_area, scores, torch.zeros_like(scores))

        order = torch.sort(scores, dim=1, descending=True, stable=True)[1][:, :self.nms_pre]
        bidx = torch.arange(b, device=seg_preds.device).unsqueeze(1)
        scores = scores.gather(1, order)
        labels = cate_labels.gather(1, order)
        area = area.gather(1, order)
        mk = masks[bidx, order].flatten(2).float()                               # (b, k, h*w)

        inter = torch.bmm(mk, mk.transpose(1, 2))                                # (b, k, k)
        union = (area.unsqueeze(2) + area.unsqueeze(1) - inter).clamp(min=1.0)
        iou = (inter / union).triu(diagonal=1)
        same = (labels.unsqueeze(2) == labels.unsqueeze(1)).float().triu(diagonal=1)
        d = iou * same
        comp = d.max(dim=1)[0]                                                   # (b, k), per column
        decay = torch.exp(-self.sigma * d * d) / torch.exp(-self.sigma * comp * comp).unsqueeze(2)
        coef = decay.min(dim=1)[0]
        new_scores = scores * coef
        new_scores = torch.where(new_scores >= self.update_thr, new_scores, torch.zeros_like(new_scores))

        final = torch.sort(new_scores, dim=1, descending=True, stable=True)[1][:, :self.max_per_img]
        out_scores = new_scores.gather(1, final)
        out_labels = labels.gather(1, final)
        out_masks = mk.bool()[bidx, final].view(b, -1, h, w)
        return out_scores, out_labels, out_masks

batch = 2
candidates = 1000
height = 200
width = 304
classes = 80
objects = 30
mask_thr = 0.5
min_area = 8.0
nms_pre = 500
sigma = 2.0
update_thr = 0.05
max_per_img = 100

def get_inputs():
    obj_c = torch.rand(batch, objects, 2) * torch.tensor([width, height])
    obj_r = torch.rand(batch, objects, 2) * 40.0 + 6.0
    obj_cls = torch.randint(0, classes, (batch, objects))
    which = torch.randint(0, objects, (batch, candidates))
    real = torch.rand(batch, candidates) < 0.95
    centre = torch.where(real.unsqueeze(-1), obj_c.gather(1, which.unsqueeze(-1).expand(-1, -1, 2))
                         + torch.randn(batch, candidates, 2) * 1.5,
                         torch.rand(batch, candidates, 2) * torch.tensor([width, height]))
    radius = torch.where(real.unsqueeze(-1), obj_r.gather(1, which.unsqueeze(-1).expand(-1, -1, 2))
                         * (1.0 + 0.08 * torch.randn(batch, candidates, 2)),
                         torch.rand(batch, candidates, 2) * 20.0 + 2.0).clamp(min=1.5)
    ys = torch.arange(height, dtype=torch.float32).view(1, 1, height, 1)
    xs = torch.arange(width, dtype=torch.float32).view(1, 1, 1, width)
    dist2 = ((xs - centre[..., 0, None, None]) / radius[..., 0, None, None]) ** 2 + \
            ((ys - centre[..., 1, None, None]) / radius[..., 1, None, None]) ** 2
    seg_preds = torch.sigmoid(6.0 * (1.0 - dist2)).to(torch.float16)
    labels = torch.where(torch.rand(batch, candidates) < 0.9, obj_cls.gather(1, which),
                         torch.randint(0, classes, (batch, candidates)))
    scores = (torch.rand(batch, candidates) * 0.9 + 0.1) * torch.where(real, 1.0, 0.4)
    return [seg_preds, scores, labels]

def get_init_inputs():
    return [mask_thr, min_area, nms_pre, sigma, update_thr, max_per_img]
