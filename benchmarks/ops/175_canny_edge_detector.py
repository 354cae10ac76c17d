import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A Canny edge detector on a batch of 8-bit RGB images, as in a data-preprocessing or
    ControlNet-conditioning pipeline (the steps of kornia.filters.canny / OpenCV's Canny), with
    a fixed number of hysteresis steps so that the work does not depend on the data.

    Input: images (batch, 3, height, width) uint8. Steps, all in fp32:
    1. gray = (0.299 R + 0.587 G + 0.114 B) / 255, shape (batch, 1, height, width).
    2. Gaussian blur: a 5 x 5 kernel, the outer product of the normalised 1-D kernel
       exp(-x^2 / (2 sigma^2)), x = -2..2, sigma = 1 (a buffer), applied as a cross-correlation
       after reflect padding of 2.
    3. Sobel gradients by cross-correlation after replicate padding of 1:
       gx with [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], gy with its transpose (gy is the
       derivative down the rows); mag = sqrt(gx^2 + gy^2).
    4. Direction: angle = atan2(gy, gx); sector = floor(angle / (pi / 4) + 0.5) mod 4 (a
       non-negative remainder), in {0, 1, 2, 3}. The two neighbours along the gradient, as
       (row, column) offsets, are (0, -1) and (0, +1) for sector 0, (-1, -1) and (+1, +1) for
       sector 1, (-1, 0) and (+1, 0) for sector 2, (-1, +1) and (+1, -1) for sector 3; a
       neighbour outside the image has magnitude 0.
    5. Non-maximum suppression: nms = mag where mag >= both neighbours' mag, else 0.
    6. Double threshold and hysteresis: strong = nms >= high, weak = nms >= low (strong pixels
       are also weak). edges starts as strong; hysteresis_steps times, edges = weak AND (some
       pixel of the 3 x 3 neighbourhood of the pixel, itself included, is in edges).

    Returns nms (batch, 1, height, width) fp32 and edges (batch, 1, height, width) bool."""
    def __init__(self, low, high, hysteresis_steps):
        super().__init__()
        self.low, self.high, self.steps = low, high, hysteresis_steps
        x = torch.arange(-2, 3, dtype=torch.float32)
        g = torch.exp(-x * x / 2.0)
        g = g / g.sum()
        self.register_buffer("gauss", torch.outer(g, g).view(1, 1, 5, 5))
        sx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
        self.register_buffer("sobel", torch.stack([sx, sx.t()]).unsqueeze(1))   # (2, 1, 3, 3)
        self.register_buffer("rgb", torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1))
        # neighbour offsets (row, col) per sector: first and second neighbour
        self.offsets = [((0, -1), (0, 1)), ((-1, -1), (1, 1)), ((-1, 0), (1, 0)), ((-1, 1), (1, -1))]

    def forward(self, images):
        h, w = images.shape[-2:]
        gray = (images.float() * self.rgb).sum(1, keepdim=True) / 255.0
        blur = F.conv2d(F.pad(gray, (2, 2, 2, 2), mode="reflect"), self.gauss)
        grad = F.conv2d(F.pad(blur, (1, 1, 1, 1), mode="replicate"), self.sobel)
        gx, gy = grad[:, :1], grad[:, 1:]
        mag = torch.sqrt(gx * gx + gy * gy)
        sector = torch.remainder(torch.floor(torch.atan2(gy, gx) / (math.pi / 4) + 0.5), 4).long()
        mp = F.pad(mag, (1, 1, 1, 1))
        shift = lambda dy, dx: mp[..., 1 + dy:1 + dy + h, 1 + dx:1 + dx + w]
        first = torch.cat([shift(*o[0]) for o in self.offsets], dim=1)          # (b, 4, h, w)
        second = torch.cat([shift(*o[1]) for o in self.offsets], dim=1)
        n1 = torch.gather(first, 1, sector)
        n2 = torch.gather(second, 1, sector)
        nms = torch.where((mag >= n1) & (mag >= n2), mag, torch.zeros_like(mag))
        strong = nms >= self.high
        weak = nms >= self.low
        edges = strong
        for _ in range(self.steps):
            grown = F.max_pool2d(edges.float(), kernel_size=3, stride=1, padding=1) > 0
            edges = weak & grown
        return nms, edges

batch = 16
height = 1024
width = 1024
low = 0.1
high = 0.3
hysteresis_steps = 8

def get_inputs():
    blocks = F.interpolate(torch.rand(batch, 3, height // 32, width // 32), size=(height, width), mode="nearest")
    smooth = F.interpolate(torch.rand(batch, 3, height // 128, width // 128), size=(height, width),
                           mode="bilinear", align_corners=False)
    img = 0.6 * blocks + 0.4 * smooth + 0.02 * torch.randn(batch, 3, height, width)
    return [(img.clamp(0.0, 1.0) * 255.0).round().to(torch.uint8)]

def get_init_inputs():
    return [low, high, hysteresis_steps]
