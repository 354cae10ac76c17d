import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Overlap-add of image patches back to an image (F.fold, col2im), normalised by how many
    patches covered each pixel (fold of ones)."""
    def __init__(self, height, width, kernel, stride):
        super().__init__()
        self.size = (height, width)
        self.kernel = kernel
        self.stride = stride

    def forward(self, patches):
        summed = F.fold(patches, self.size, self.kernel, stride=self.stride)
        count = F.fold(torch.ones_like(patches), self.size, self.kernel, stride=self.stride)
        return summed / count

batch = 16
channels = 3
height = 224
width = 224
kernel = 16
stride = 8

def get_inputs():
    blocks = ((height - kernel) // stride + 1) * ((width - kernel) // stride + 1)
    return [torch.randn(batch, channels * kernel * kernel, blocks)]

def get_init_inputs():
    return [height, width, kernel, stride]
