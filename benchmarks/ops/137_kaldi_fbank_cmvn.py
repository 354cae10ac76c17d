import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A Kaldi-style filterbank front end for speech recognisers (as in WeNet and FunASR):
    the waveform (scaled to 16-bit range) is cut into overlapping frames by Tensor.unfold
    (no padding, snip_edges), each frame has its DC offset removed, its raw log energy is
    taken, it is pre-emphasised against its own previous sample (torch.roll, the first sample
    against itself), multiplied by a Povey window (Hann to the power 0.85) and zero-padded to
    the next power of two, computed in __init__. The power spectrum comes from a product with
    a cosine/sine DFT basis buffer (as export-friendly front ends do instead of an FFT), then
    a triangular mel filterbank on the 1127 ln(1 + f / 700) scale (a buffer built in __init__
    from the FFT size, the mel count and the sample rate), the log with a floor, and global
    CMVN (mean and inverse std buffers). Returns the features (batch, frames, n_mels) and the
    per-frame log energy (batch, frames)."""
    def __init__(self, win_length, hop_length, n_mels, sample_rate, preemph):
        super().__init__()
        self.win_length = win_length
        self.hop_length = hop_length
        self.preemph = preemph
        self.n_fft = 1 << (win_length - 1).bit_length()
        self.eps = torch.finfo(torch.float32).eps
        n_freqs = self.n_fft // 2 + 1
        n = torch.arange(win_length, dtype=torch.float64)
        window = (0.5 - 0.5 * torch.cos(2 * math.pi * n / (win_length - 1))) ** 0.85
        self.register_buffer("window", window.float())
        k = torch.arange(self.n_fft, dtype=torch.float64)[:, None]
        f = torch.arange(n_freqs, dtype=torch.float64)[None, :]
        ang = 2 * math.pi * k * f / self.n_fft
        self.register_buffer("basis", torch.cat([torch.cos(ang), -torch.sin(ang)], dim=1).float())
        def mel(hz):
            return 1127.0 * torch.log1p(torch.as_tensor(hz, dtype=torch.float64) / 700.0)
        edges = torch.linspace(float(mel(20.0)), float(mel(sample_rate / 2)), n_mels + 2, dtype=torch.float64)
        bin_mel = mel(torch.arange(n_freqs, dtype=torch.float64) * sample_rate / self.n_fft)[:, None]
        left, center, right = edges[None, :-2], edges[None, 1:-1], edges[None, 2:]
        up = (bin_mel - left) / (center - left)
        down = (right - bin_mel) / (right - center)
        self.register_buffer("melbank", torch.clamp(torch.minimum(up, down), min=0).float())
        self.register_buffer("cmvn_mean", torch.randn(n_mels) + 12.0)
        self.register_buffer("cmvn_istd", torch.rand(n_mels) * 0.3 + 0.2)

    def forward(self, wave):
        frames = (wave * 32768.0).unfold(-1, self.win_length, self.hop_length)
        frames = frames - frames.mean(dim=-1, keepdim=True)
        log_energy = torch.log(torch.clamp(frames.pow(2).sum(dim=-1), min=self.eps))
        first = torch.arange(self.win_length, device=wave.device) == 0
        prev = torch.where(first, frames, torch.roll(frames, 1, dims=-1))
        frames = (frames - self.preemph * prev) * self.window
        frames = F.pad(frames, (0, self.n_fft - self.win_length))
        spec = frames @ self.basis
        re, im = spec.chunk(2, dim=-1)
        power = re * re + im * im
        fbank = torch.log(torch.clamp(power @ self.melbank, min=self.eps))
        return (fbank - self.cmvn_mean) * self.cmvn_istd, log_energy

batch = 16
frames = 1000
hop_length = 160
win_length = 400
n_mels = 80
sample_rate = 16000.0
preemph = 0.97

def get_inputs():
    samples = (frames - 1) * hop_length + win_length
    t = torch.arange(samples) / sample_rate
    tone = torch.sin(2 * math.pi * (200.0 + 1800.0 * torch.rand(batch, 1)) * t)
    wave = 0.3 * tone + 0.05 * torch.randn(batch, samples)
    return [wave]

def get_init_inputs():
    return [win_length, hop_length, n_mels, sample_rate, preemph]
