"""What a model's tokens cost: list prices by model name, and the cost of a call.

Used by the API agents (each call's cost) and by the report (which models were not priced).
"""

from __future__ import annotations

from forgekernel.errors import ForgeError

FIX = ("give its price: --price IN,OUT or FK_PRICE=IN,OUT in local.env (USD per million input "
       "and output tokens; 0,0 for a free local model)")

PRICES: dict[str, tuple[float, float]] = {
    # model name prefix: (USD per million input tokens, USD per million output tokens),
    # list prices as published by the providers; edit here when they change.
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0),
    "claude-3-7-sonnet": (3.0, 15.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "gpt-4o-mini": (0.15, 0.6),
    "gpt-4o": (2.5, 10.0),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1": (2.0, 8.0),
    "gpt-5-nano": (0.05, 0.4),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5": (1.25, 10.0),
    "o4-mini": (1.1, 4.4),
    "o3": (2.0, 8.0),
}
"""Per-model prices, matched by the longest prefix of the model name (provider/ prefix dropped)."""


CACHE_RATES: dict[str, tuple[float, float]] = {
    # model name prefix: (cache read, cache write) as multiples of the input price, as the
    # providers publish them (Anthropic: 5-minute cache writes; OpenAI: cached input, no write fee).
    "claude": (0.1, 1.25),
    "gpt-5": (0.1, 1.0),
    "gpt-4.1": (0.25, 1.0),
    "gpt-4o": (0.5, 1.0),
    "o4-mini": (0.25, 1.0),
    "o3": (0.25, 1.0),
}
"""Cached input tokens are billed at these multiples of the input price; a model not listed
here has its cached tokens billed as fresh input (never under-counted)."""


def cache_rates(model: str) -> tuple[float, float]:
    name = model.rsplit("/", 1)[-1].lower()
    hits = [p for p in CACHE_RATES if name.startswith(p)]
    return CACHE_RATES[max(hits, key=len)] if hits else (1.0, 1.0)


def price_of(model: str) -> tuple[float, float] | None:
    name = model.rsplit("/", 1)[-1].lower()
    hits = [p for p in PRICES if name.startswith(p)]
    return PRICES[max(hits, key=len)] if hits else None


def dollars(model: str, input_tokens: int, output_tokens: int,
            given: tuple[float, float] | None = None, cache_read: int = 0, cache_write: int = 0) -> float:
    """Cost of the tokens at ``given`` prices, else the table's (0 for a model it lacks: the
    report names such models). ``input_tokens`` counts every input token; ``cache_read`` and
    ``cache_write`` of them are billed at the model's cache rates."""
    price = given or price_of(model)
    if price is None:
        return 0.0
    read, write = cache_rates(model)
    fresh = max(0, input_tokens - cache_read - cache_write)
    billed_in = fresh + cache_read * read + cache_write * write
    return (billed_in * price[0] + output_tokens * price[1]) / 1e6


def unpriced(models: set[str]) -> list[str]:
    """The models among ``models`` with no known price."""
    return sorted(m for m in models if m and price_of(m) is None)


class PriceError(ForgeError, ValueError):
    """A price that is not two non-negative numbers."""


def parse(text: str) -> tuple[float, float]:
    """``IN,OUT`` (USD per million input and output tokens) -> the pair; one-line error else."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        pair = tuple(float(p) for p in parts)
    except ValueError:
        pair = ()
    if len(pair) != 2 or min(pair) < 0:
        raise PriceError(f"price {text!r}: expected IN,OUT, two non-negative numbers (USD per "
                         "million input and output tokens), e.g. 3,15")
    return pair[0], pair[1]


def missing(model: str, given: tuple[float, float] | None) -> str:
    """Why ``model``'s calls could not be priced ('' when they can): without a price the run's
    dollar budget would never be enforced, so the run does not start."""
    if given is not None or price_of(model) is not None:
        return ""
    return (f"no price known for model '{model}', so the run's dollar budget could not be "
            f"enforced; {FIX}")
