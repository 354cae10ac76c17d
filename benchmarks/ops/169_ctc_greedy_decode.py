import torch
import torch.nn as nn


class Model(nn.Module):
    """Greedy (best-path) CTC decoding of a batch of acoustic-model outputs, as at the end of
    wav2vec2 / Conformer-CTC inference, with the hypotheses compacted into a fixed-size padded
    tensor (no data-dependent shapes).

    Inputs: logits (batch, frames, vocab) fp16 and lengths (batch,) int64, the number of valid
    frames of each utterance (1 <= length <= frames). The blank id is 0. The logits are taken
    to fp32 and passed through log_softmax over the vocabulary. For each frame the best label is
    the argmax over the vocabulary (the first index on ties) and its log-probability the max.
    Frames t >= length are invalid: their label is treated as blank and their log-probability
    as 0. A valid frame t emits its label when the label is not blank and differs from the
    label of frame t - 1 (frame 0 emits whenever it is not blank); i.e. repeats are collapsed
    and blanks removed, and a blank between two equal labels keeps both. The emitted labels of
    an utterance are written, in frame order, to the front of its row: tokens[b, j] is the
    label of the j-th emitting frame and frame_idx[b, j] that frame's index, for j < count[b];
    positions j >= count[b] hold -1 in both. score[b] is the sum of the best log-probabilities
    over the valid frames (the log-probability of the best path).

    Returns tokens (batch, frames) int64, frame_idx (batch, frames) int64, count (batch,) int64
    and score (batch,) fp32."""
    def __init__(self, blank):
        super().__init__()
        self.blank = blank

    def forward(self, logits, lengths):
        bsz, frames, _ = logits.shape
        logp = torch.log_softmax(logits.float(), dim=-1)
        best_logp, best = logp.max(dim=-1)                                 # (b, t)
        t = torch.arange(frames, device=logits.device)
        valid = t.unsqueeze(0) < lengths.unsqueeze(1)
        best = torch.where(valid, best, torch.full_like(best, self.blank))
        score = torch.where(valid, best_logp, torch.zeros_like(best_logp)).sum(-1)
        prev = torch.cat([torch.full_like(best[:, :1], -1), best[:, :-1]], dim=1)
        emit = (best != self.blank) & (best != prev)
        cum = torch.cumsum(emit.to(torch.int64), dim=1)                     # (b, t)
        count = cum[:, -1]
        # the j-th emitting frame is the first frame whose running count reaches j + 1
        want = (t + 1).unsqueeze(0).expand(bsz, -1).contiguous()
        src = torch.searchsorted(cum, want, right=False).clamp_(max=frames - 1)
        have = t.unsqueeze(0) < count.unsqueeze(1)
        tokens = torch.where(have, torch.gather(best, 1, src), torch.full_like(best, -1))
        frame_idx = torch.where(have, src, torch.full_like(src, -1))
        return tokens, frame_idx, count, score

batch = 64
frames = 1500
vocab = 1024
blank = 0

def get_inputs():
    logits = torch.randn(batch, frames, vocab) * 2.0
    logits[..., blank] += 4.5
    # stretches of a repeated label, as a real acoustic model emits
    runs = torch.randint(1, vocab, (batch, (frames + 3) // 4)).repeat_interleave(4, dim=1)[:, :frames]
    logits.scatter_add_(2, runs.unsqueeze(-1), torch.full((batch, frames, 1), 4.0))
    lengths = torch.randint(frames // 2, frames + 1, (batch,))
    lengths[0] = frames
    return [logits.to(torch.float16), lengths]

def get_init_inputs():
    return [blank]
