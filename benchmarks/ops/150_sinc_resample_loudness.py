import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Speech-model audio preprocessing: 16-bit stereo PCM at 44.1 kHz to 16 kHz mono at a fixed
    loudness. The int16 samples are scaled to [-1, 1) in fp32 and the channels averaged. The
    resampler is torchaudio's band-limited sinc interpolation with a Hann window: both rates
    are divided by their gcd (441 and 160 phases), and a kernel buffer (new phases, 1,
    2 * width + orig) is built in __init__ in float64 from the cut-off min(orig, new) * rolloff,
    the lowpass filter width (6 zero crossings) and width = ceil(6 * orig / cut-off). The
    waveform is padded by width on the left and width + orig on the right, convolved with
    stride orig (conv1d, one input channel, one output channel per output phase), the phases
    interleaved by transpose and reshape, and cut to ceil(new * length / orig) samples. The
    mean is removed, and each clip is scaled to a target RMS level (in dBFS) with its gain
    capped, then clamped to [-1, 1]. Returns the audio (batch, new_samples) and the gains
    (batch)."""
    def __init__(self, orig_freq, new_freq, lowpass_filter_width, rolloff, target_db, max_gain):
        super().__init__()
        g = math.gcd(orig_freq, new_freq)
        self.orig, self.new = orig_freq // g, new_freq // g
        base = min(self.orig, self.new) * rolloff
        self.width = math.ceil(lowpass_filter_width * self.orig / base)
        idx = torch.arange(-self.width, self.width + self.orig, dtype=torch.float64)[None, None] / self.orig
        t = torch.arange(0, -self.new, -1, dtype=torch.float64)[:, None, None] / self.new + idx
        t = (t * base).clamp(-lowpass_filter_width, lowpass_filter_width)
        window = torch.cos(t * math.pi / lowpass_filter_width / 2) ** 2
        t = t * math.pi
        kernel = torch.where(t == 0, torch.ones_like(t), torch.sin(t) / t) * window * (base / self.orig)
        self.register_buffer("kernel", kernel.float())
        self.target_rms = 10.0 ** (target_db / 20.0)
        self.max_gain = max_gain

    def forward(self, pcm):
        b, ch, length = pcm.shape
        wave = (pcm.float() / 32768.0).mean(dim=1)
        wave = F.pad(wave, (self.width, self.width + self.orig))
        y = F.conv1d(wave.unsqueeze(1), self.kernel, stride=self.orig)
        y = y.transpose(1, 2).reshape(b, -1)[:, : math.ceil(self.new * length / self.orig)]
        y = y - y.mean(dim=-1, keepdim=True)
        rms = torch.sqrt(y.pow(2).mean(dim=-1) + 1e-10)
        gain = torch.clamp(self.target_rms / rms, max=self.max_gain)
        return torch.clamp(y * gain.unsqueeze(-1), -1.0, 1.0), gain

batch = 8
channels = 2
seconds = 10
orig_freq = 44100
new_freq = 16000
lowpass_filter_width = 6
rolloff = 0.99
target_db = -20.0
max_gain = 10.0

def get_inputs():
    n = seconds * orig_freq
    t = torch.arange(n) / orig_freq
    f0 = 100.0 + 300.0 * torch.rand(batch, 1, 1)
    voiced = sum(torch.sin(2 * math.pi * f0 * h * t) / h for h in range(1, 8))
    level = 0.02 + 0.3 * torch.rand(batch, 1, 1)
    wave = level * voiced * (1.0 + 0.1 * torch.randn(batch, channels, 1)) + 0.01 * torch.randn(batch, channels, n)
    return [torch.clamp(wave * 32768.0, -32768, 32767).round().to(torch.int16)]

def get_init_inputs():
    return [orig_freq, new_freq, lowpass_filter_width, rolloff, target_db, max_gain]
