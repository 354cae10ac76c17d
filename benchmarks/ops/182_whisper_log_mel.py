import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Whisper's log-Mel front end (openai/whisper audio.log_mel_spectrogram, the 128-bin
    variant of large-v3), batched, from 16-bit PCM: a short-time Fourier transform by
    torch.stft, power, a Slaney mel filterbank, log10 and a dynamic-range clamp per clip.

    Input: pcm int16 (batch, samples), 16 kHz clips already padded or trimmed to 30 s (zeros
    after the end of a short clip). Steps:
    1. audio = pcm.float() / 32768.
    2. torch.stft(audio, n_fft, hop, window=hann_window(n_fft) (periodic), center=True,
       pad_mode="reflect", onesided, not normalised, complex output): (batch, n_fft / 2 + 1,
       frames) with frames = samples / hop + 1; the last frame is dropped; power = |X|^2.
    3. mel = filters @ power (filters (n_mels, n_fft / 2 + 1), a buffer): (batch, n_mels,
       samples / hop).
    4. log_spec = log10(max(mel, 1e-10)); per clip, log_spec = max(log_spec, (the clip's
       largest log_spec) - 8); out = (log_spec + 4) / 4.
    The filterbank is librosa.filters.mel(sr, n_fft, n_mels) with the defaults Whisper's
    mel_filters.npz came from (Slaney mel scale, Slaney area normalisation, fmin 0, fmax sr / 2),
    computed in float64 in __init__ and stored as fp32: the Slaney scale is mel = f / (200 / 3)
    below 1 kHz and 15 + ln(f / 1000) / (ln 6.4 / 27) above; n_mels + 2 points evenly spaced in
    mel between 0 and sr / 2 are taken back to Hz (f_0 .. f_{n+1}); bin frequencies are k sr /
    n_fft; filter i is the triangle max(0, min((f - f_i) / (f_{i+1} - f_i), (f_{i+2} - f) /
    (f_{i+2} - f_{i+1}))) times 2 / (f_{i+2} - f_i).
    Returns the features fp32 (batch, n_mels, samples / hop)."""
    def __init__(self, sample_rate, n_fft, hop, n_mels):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("filters", self._slaney_mel(sample_rate, n_fft, n_mels).float())

    @staticmethod
    def _slaney_mel(sr, n_fft, n_mels):
        f_sp, min_log_hz = 200.0 / 3, 1000.0
        min_log_mel = min_log_hz / f_sp
        logstep = math.log(6.4) / 27.0

        def hz_to_mel(f):
            return torch.where(f >= min_log_hz, min_log_mel + torch.log(f / min_log_hz) / logstep, f / f_sp)

        def mel_to_hz(m):
            return torch.where(m >= min_log_mel, min_log_hz * torch.exp(logstep * (m - min_log_mel)), f_sp * m)

        lo = hz_to_mel(torch.tensor(0.0, dtype=torch.float64))
        hi = hz_to_mel(torch.tensor(sr / 2.0, dtype=torch.float64))
        mel_f = mel_to_hz(torch.linspace(float(lo), float(hi), n_mels + 2, dtype=torch.float64))
        fft_f = torch.arange(n_fft // 2 + 1, dtype=torch.float64) * sr / n_fft
        fdiff = mel_f[1:] - mel_f[:-1]
        ramps = mel_f[:, None] - fft_f[None, :]
        lower = -ramps[:n_mels] / fdiff[:n_mels, None]
        upper = ramps[2:n_mels + 2] / fdiff[1:n_mels + 1, None]
        weights = torch.clamp(torch.minimum(lower, upper), min=0.0)
        enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
        return weights * enorm[:, None]

    def forward(self, pcm):
        audio = pcm.float() / 32768.0
        spec = torch.stft(audio, self.n_fft, self.hop, window=self.window, center=True,
                          pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
        power = spec[..., :-1].abs() ** 2
        mel = self.filters @ power
        log_spec = torch.clamp(mel, min=1e-10).log10()
        peak = log_spec.amax(dim=(1, 2), keepdim=True)
        log_spec = torch.maximum(log_spec, peak - 8.0)
        return (log_spec + 4.0) / 4.0

batch = 32
sample_rate = 16000
seconds = 30
n_fft = 400
hop = 160
n_mels = 128

def get_inputs():
    n = sample_rate * seconds
    t = torch.arange(n, dtype=torch.float32) / sample_rate
    f0 = 100.0 + 150.0 * torch.rand(batch, 1)                         # a voice-like pitch
    vibrato = 1.0 + 0.03 * torch.sin(2 * math.pi * 5.0 * t)
    phase = 2 * math.pi * torch.cumsum(f0 * vibrato / sample_rate, dim=1)
    harmonics = sum(torch.sin(k * phase) / k for k in range(1, 9))
    syllables = torch.sin(2 * math.pi * (2.0 + 3.0 * torch.rand(batch, 1)) * t).clamp(min=0.0)
    wave = 0.3 * harmonics * syllables + 0.01 * torch.randn(batch, n)
    length = (torch.rand(batch, 1) * 0.8 + 0.2) * n                    # shorter clips, zero-padded
    length[0] = n
    wave = wave * (torch.arange(n) < length)
    return [(wave.clamp(-1.0, 1.0) * 32767.0).round().to(torch.int16)]

def get_init_inputs():
    return [sample_rate, n_fft, hop, n_mels]
