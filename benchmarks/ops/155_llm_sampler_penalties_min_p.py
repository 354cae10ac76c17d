import torch
import torch.nn as nn


class Model(nn.Module):
    """An LLM serving sampler for one decode step (vLLM style), with per-request parameters.
    logits are bf16 (batch, vocab), taken to fp32. prompt_tokens (batch, prompt_len) and
    output_tokens (batch, output_len) are int64, right-padded with the value vocab (one past the
    last token id). Output-token counts are built by scatter_add_ of ones into a (batch,
    vocab + 1) fp32 table whose last (padding) column is then dropped; the prompt's presence
    is a bool table filled by scatter_ with True, padding column dropped. Penalties, in order:
    the repetition penalty (per row, > 0) on every token seen in the prompt or the output
    (positive logits divided by it, the others multiplied by it); then the frequency penalty
    times the output count and the presence penalty times (output count > 0) are subtracted.
    The greedy token is the argmax of the penalised logits (first index on ties). Rows whose
    temperature is below 1e-5 are greedy and use temperature 1 for the rest; the penalised
    logits are divided by the temperature, a softmax gives the probabilities, and min-p
    filtering sets to -inf every logit whose probability is below min_p times the row's
    largest probability. log_softmax of the filtered logits gives the final log-probabilities.
    Sampling is the exponential race: argmax over the vocab of exp(logprob) / exp_noise, with
    exp_noise (batch, vocab) fp32 i.i.d. Exponential(1) given as an input. Returns the chosen
    tokens, int64 (batch,) (greedy rows take the greedy token), and their final
    log-probabilities, fp32 (batch,)."""
    def __init__(self):
        super().__init__()

    def forward(self, logits, prompt_tokens, output_tokens, temperature, repetition_penalty,
                frequency_penalty, presence_penalty, min_p, exp_noise):
        b, vocab = logits.shape
        x = logits.float()
        counts = x.new_zeros(b, vocab + 1).scatter_add_(
            1, output_tokens, torch.ones(output_tokens.shape, dtype=x.dtype, device=x.device))[:, :vocab]
        in_prompt = torch.zeros(b, vocab + 1, dtype=torch.bool, device=x.device).scatter_(
            1, prompt_tokens, True)[:, :vocab]
        seen = in_prompt | (counts > 0)
        rp = repetition_penalty.unsqueeze(1)
        x = torch.where(seen, torch.where(x > 0, x / rp, x * rp), x)
        x = x - frequency_penalty.unsqueeze(1) * counts - presence_penalty.unsqueeze(1) * (counts > 0).float()
        greedy_row = temperature < 1e-5
        greedy = x.argmax(dim=-1)
        temp = torch.where(greedy_row, torch.ones_like(temperature), temperature)
        x = x / temp.unsqueeze(1)
        probs = torch.softmax(x, dim=-1)
        x = x.masked_fill(probs < min_p.unsqueeze(1) * probs.amax(dim=-1, keepdim=True), float("-inf"))
        logprobs = torch.log_softmax(x, dim=-1)
        sampled = (logprobs.exp() / exp_noise).argmax(dim=-1)
        tokens = torch.where(greedy_row, greedy, sampled)
        return tokens, logprobs.gather(1, tokens.unsqueeze(1)).squeeze(1)

batch = 128
vocab = 151936
prompt_len = 1024
output_len = 512

def get_inputs():
    logits = (2.0 * torch.randn(batch, vocab)).to(torch.bfloat16)
    # a few confident rows: one large logit
    logits[::3, 1234] = 18.0
    pos = torch.arange(prompt_len).unsqueeze(0)
    prompt = torch.randint(0, vocab, (batch, prompt_len))
    prompt = torch.where(pos < torch.randint(1, prompt_len + 1, (batch, 1)), prompt, vocab)
    pos = torch.arange(output_len).unsqueeze(0)
    # outputs drawn from a small set of ids so tokens repeat
    output = torch.randint(0, 4096, (batch, output_len))
    output = torch.where(pos < torch.randint(0, output_len + 1, (batch, 1)), output, vocab)
    temperature = torch.rand(batch) * 0.8 + 0.4
    temperature[::4] = 0.0
    repetition_penalty = 1.0 + 0.3 * torch.rand(batch)
    frequency_penalty = 0.5 * torch.rand(batch)
    presence_penalty = 0.5 * torch.rand(batch)
    min_p = 0.1 * torch.rand(batch)
    min_p[1::2] = 0.0
    exp_noise = torch.empty(batch, vocab).exponential_()
    return [logits, prompt, output, temperature, repetition_penalty, frequency_penalty,
            presence_penalty, min_p, exp_noise]

def get_init_inputs():
    return []
