import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """MONAI's DiceCELoss for 3-D multi-organ segmentation (as used to train UNETR / Swin-UNETR on
    BTCV), with softmax, to_onehot_y and include_background=False. logits are bf16 (batch,
    classes, depth, height, width); labels are int64 (batch, depth, height, width) in [0,
    classes). Probabilities are softmax(logits.float()) over the class dimension and the target
    is the one-hot of the labels (laid out like the logits). Channel 0 (background) is dropped for
    the Dice term: for each sample and each foreground class c, with sums over the voxels, I =
    sum(p_c * y_c), S = sum(p_c) + sum(y_c) and dice = (2 I + 1e-5) / (S + 1e-5); the Dice loss is
    the mean of 1 - dice over (batch, classes - 1). The CE term is F.cross_entropy of the fp32
    logits against the labels (mean over all voxels, all classes). The loss is lambda_dice * Dice
    loss + lambda_ce * CE (both 1.0 by default). Returns the loss (0-d fp32) and the soft Dice
    scores fp32 (batch, classes - 1)."""
    def __init__(self, classes, lambda_dice, lambda_ce):
        super().__init__()
        self.classes, self.lambda_dice, self.lambda_ce = classes, lambda_dice, lambda_ce

    def forward(self, logits, labels):
        x = logits.float()
        p = torch.softmax(x, dim=1)
        y = F.one_hot(labels, self.classes).permute(0, 4, 1, 2, 3).float()
        p, yf = p[:, 1:], y[:, 1:]
        inter = (p * yf).sum((2, 3, 4))
        denom = p.sum((2, 3, 4)) + yf.sum((2, 3, 4))
        dice = (2.0 * inter + 1e-5) / (denom + 1e-5)
        dice_loss = (1.0 - dice).mean()
        ce = F.cross_entropy(x, labels)
        return self.lambda_dice * dice_loss + self.lambda_ce * ce, dice

batch = 2
classes = 14
depth = 128
height = 128
width = 128
lambda_dice = 1.0
lambda_ce = 1.0

def get_inputs():
    labels = torch.randint(0, classes, (batch, depth // 8, height // 8, width // 8))
    labels = labels.repeat_interleave(8, 1).repeat_interleave(8, 2).repeat_interleave(8, 3)
    labels = torch.where(torch.rand(batch, depth, height, width) < 0.5, torch.zeros_like(labels), labels)
    logits = torch.randn(batch, classes, depth, height, width) + 2.0 * F.one_hot(labels, classes).permute(0, 4, 1, 2, 3)
    return [logits.to(torch.bfloat16), labels]

def get_init_inputs():
    return [classes, lambda_dice, lambda_ce]
