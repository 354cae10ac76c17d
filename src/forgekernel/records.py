"""Frozen, validated records shared by every part of forgekernel.

This module imports nothing from forgekernel. Every record is a pydantic model with
``extra="forbid"`` so a misspelt key is an error, and ``frozen=True`` so a record never
changes after it is made (build a new one with ``model_copy(update=...)``).
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DTYPES = ("bfloat16", "float16", "float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")
"""Element types a task input or output may have (torch names)."""

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1,
               "int16": 2, "int32": 4, "int64": 8, "bool": 1}

ARCHES = ("sm90", "sm100", "any")
LANGUAGES = ("triton", "cuda", "cute-dsl")
FAMILIES = (
    "rownorm",  # row-wise normalisation: rmsnorm, layernorm, fused add + norm
    "softmax",  # row-wise softmax and log-softmax style reductions
    "elementwise",  # element-wise and gated activations (swiglu, gelu, ...)
    "rope",  # rotary position embedding
    "cross_entropy",  # row-wise loss over a vocabulary
    "matmul",  # dense matrix products
    "other",  # anything else: needs an LLM agent
)


class Record(BaseModel):
    """Base for all records: frozen, strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- task


class Dist(Record):
    """How an input's values are drawn.

    kinds: ``normal`` (mean, std), ``uniform`` (low, high), ``randint`` (low inclusive,
    high exclusive), ``positive`` (uniform in [low, high] with 0 < low; default [0.5, 1.5]),
    ``custom`` (made by the reference's own code, ``make_inputs`` or KernelBench's
    ``get_inputs()``; ``note`` says how).
    """

    kind: Literal["normal", "uniform", "randint", "positive", "custom"] = "normal"
    mean: float = 0.0
    std: float = 1.0
    low: float | None = None
    high: float | None = None
    note: str = ""
    """How the values are made, in words (any kind; required for ``custom``)."""

    @model_validator(mode="after")
    def _check(self) -> Dist:
        if self.kind in ("uniform", "randint") and (self.low is None or self.high is None):
            raise ValueError(f"dist kind '{self.kind}' needs both low and high")
        if self.low is not None and self.high is not None and self.high <= self.low:
            raise ValueError("dist high must be greater than low")
        if self.kind == "positive" and self.low is not None and self.low <= 0:
            raise ValueError("dist kind 'positive' needs low > 0")
        if self.std < 0:
            raise ValueError("dist std must be >= 0")
        if self.kind == "custom" and not self.note:
            raise ValueError("dist kind 'custom' needs a note saying how the values are made")
        return self


class AxisSpec(Record):
    """A named dimension of the task's tensors."""

    description: str = ""
    min: int = 1
    max: int | None = None
    multiple_of: int = 1
    constant: str | None = None
    """KernelBench tasks: the module constant(s) this axis sets, ``name`` or ``name[i]`` (element i
    of a tuple), several comma-separated when they must stay equal (default: named like the axis)."""
    follows: str | None = None
    """KernelBench tasks: the size axis this semantic constant keeps its ratio to (num_groups to
    the channels it divides) in every workload, as in the first; hidden ones never vary it alone."""
    smoke_scaled: bool = False
    """KernelBench: a semantic constant only smoke workloads scale (in min..max; nothing else made
    the problem small); other workloads keep it at max, hidden ones never vary it."""


class TensorSpec(Record):
    """One input or output tensor: dtype and shape as axis names (or fixed ints)."""

    dtype: Literal[DTYPES]  # type: ignore[valid-type]
    shape: tuple[str | int, ...]
    dist: Dist = Field(default_factory=Dist)


class Workload(Record):
    """One set of axis values the operator runs at."""

    axes: dict[str, int]
    smoke: bool = False
    hidden: bool = False
    """Added by the judge; never shown to an agent."""

    def label(self) -> str:
        return " x ".join(f"{k}={v}" for k, v in self.axes.items())


class JudgeSpec(Record):
    """Task-level judge settings."""

    trials: int = Field(3, ge=1, le=50)
    rtol: float | None = Field(None, gt=0)
    """Explicit tolerance override (relative); otherwise calibrated from the reference."""
    atol: float | None = Field(None, ge=0)
    timeout_s: float = Field(300.0, gt=0)
    hidden: bool = True
    """Add hidden odd-shaped workloads derived from the axes."""
    tolerance: dict[str, float] = Field(default_factory=dict)
    """Fixed tolerance per output dtype (``float32 = 1e-2``): ``|out - ref| <= t + t * |ref|``
    elementwise (atol = rtol = t, as KernelBench's ``torch.allclose``); replaces calibration
    for outputs of those dtypes."""
    tf32: bool = False
    """float32 matmuls and convolutions may run on TF32 tensor cores: the float32 roofline
    uses the TF32 peak and calibrated float32 tolerances admit TF32 rounding."""
    module_mode: Literal["train", "eval"] = "train"
    """KernelBench tasks: the mode Model and ModelNew are both put in (KernelBench's own
    evaluator never calls .eval(), so its modules run in training mode)."""

    @model_validator(mode="after")
    def _check_tolerance(self) -> JudgeSpec:
        for dtype, tol in self.tolerance.items():
            if dtype not in ("bfloat16", "float16", "float32", "float64"):
                raise ValueError(f"tolerance key '{dtype}' is not a floating dtype (use bfloat16, "
                                 "float16, float32 or float64)")
            if not tol > 0:
                raise ValueError(f"tolerance {dtype} = {tol} must be > 0")
        return self


class TargetSpec(Record):
    speedup: float = Field(1.2, gt=0)


class BudgetSpec(Record):
    iterations: int = Field(40, ge=1)
    minutes: float = Field(90.0, gt=0)
    dollars: float = Field(20.0, ge=0)


class PolicySpec(Record):
    forbid: tuple[str, ...] = ()
    """Dotted library calls a candidate must not make (AST and launched-kernel audit)."""
    library_kernels: bool = False
    """Triton kernels of installed libraries (Liger, say) count as the candidate's own (it need
    not define one); off by default; `forge judge --library-kernels` sets it for one verdict."""
    library_ops: tuple[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")], ...] = ()
    """ATen ops (``convolution``) a candidate may leave to PyTorch's library (docs/tasks.md)."""


class CostSpec(Record):
    """Optional cost formulas: small safe expressions over the axes."""

    flops: str | None = None
    bytes: str | None = None


class TaskSpec(Record):
    """A validated task: reference operator plus the shapes it runs at."""

    name: str
    description: str = ""
    arch: Literal[ARCHES] = "sm90"  # type: ignore[valid-type]
    language: Literal[LANGUAGES] = "triton"  # type: ignore[valid-type]
    languages: tuple[Literal[LANGUAGES], ...] = ()  # type: ignore[valid-type]
    """Every language a candidate may be written in, when more than ``language`` (the first
    choice): the architect picks one per milestone."""
    family: Literal[FAMILIES] = "other"  # type: ignore[valid-type]
    format: Literal["forge", "kernelbench"] = "forge"
    axes: dict[str, AxisSpec]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec] = Field(default_factory=dict)
    workloads: tuple[Workload, ...]
    judge: JudgeSpec = Field(default_factory=JudgeSpec)
    target: TargetSpec = Field(default_factory=TargetSpec)
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    policy: PolicySpec = Field(default_factory=PolicySpec)
    cost: CostSpec = Field(default_factory=CostSpec)
    root: str = ""
    """Directory the task was loaded from (absolute)."""

    @model_validator(mode="after")
    def _languages(self) -> TaskSpec:
        if self.languages and self.language not in self.languages:
            raise ValueError(f"language {self.language!r} is not among languages "
                             f"{list(self.languages)}")
        return self

    def allowed_languages(self) -> tuple[str, ...]:
        """``language`` first, then the others of ``languages``."""
        return (self.language, *(x for x in self.languages if x != self.language))

    def smoke_workloads(self) -> tuple[Workload, ...]:
        return tuple(w for w in self.workloads if w.smoke)

    def gpu_workloads(self) -> tuple[Workload, ...]:
        return tuple(w for w in self.workloads if not w.smoke)

    def derive(self, axes: dict[str, int]) -> dict[str, int] | None:
        """``axes`` with every axis that follows another (``AxisSpec.follows``) set from it at
        the first workload's ratio; None when such a value would not be a whole number."""
        out = dict(axes)
        first = self.workloads[0].axes if self.workloads else {}
        for name, spec in self.axes.items():
            lead = spec.follows
            if lead is None or lead not in out or not first.get(lead):
                continue
            num = out[lead] * first[name]
            if num % first[lead] or num // first[lead] < 1:
                return None
            out[name] = num // first[lead]
        return out


# ---------------------------------------------------------------- judging


class Status(enum.StrEnum):
    """Closed set of verdict statuses."""

    PASSED = "PASSED"
    COMPILE_ERROR = "COMPILE_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    TIMEOUT = "TIMEOUT"
    WRONG_SHAPE = "WRONG_SHAPE"
    WRONG_DTYPE = "WRONG_DTYPE"
    WRONG_VALUES = "WRONG_VALUES"
    REJECTED = "REJECTED"


class Measurement(Record):
    """A timing: median and spread over ``n`` repetitions, with what clock produced it."""

    median_ms: float
    spread_ms: float
    n: int
    label: Literal["device", "cuda-graph", "cpu-interpret", "host"] = "device"


class WorkloadResult(Record):
    """Per-workload outcome inside a verdict. Timings exist only when the verdict PASSED."""

    axes: dict[str, int]
    hidden: bool = False
    passed: bool | None = None
    """Whether the candidate was correct here (None: not checked). A hidden workload shows
    only this and ``hidden``: no axes, errors or index."""
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    tolerance: float | None = None
    where: str | None = None
    median_ms: float | None = None
    spread_ms: float | None = None
    reference_ms: float | None = None
    speedup: float | None = None
    sol_pct: float | None = None
    timing_label: str | None = None


class Verdict(Record):
    """What the judge returns for one candidate."""

    status: Status
    reason: str = ""
    candidate: str = ""
    judge: str = ""
    device: str = ""
    delivery: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    workloads: tuple[WorkloadResult, ...] = ()
    noise_floor: float | None = None
    speedup: float | None = None
    """Geometric mean speedup over the timed visible workloads (PASSED only)."""
    profile: dict[str, Any] = Field(default_factory=dict)
    feedback: str = ""
    wall_s: float | None = None

    @model_validator(mode="after")
    def _timings_only_when_passed(self) -> Verdict:
        if self.status is not Status.PASSED:
            if self.speedup is not None or any(w.median_ms is not None for w in self.workloads):
                raise ValueError("timings exist only in a PASSED verdict")
        return self

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED


class KernelStat(Record):
    """One kernel seen in a profile: name, launches per call, share of device time."""

    name: str
    count: int
    time_ms: float | None = None
    share: float | None = None


class Profile(Record):
    """Measurements of one implementation at one workload.

    ``metrics`` uses the documented names (see ``forgekernel.profile.METRICS``); a metric
    that could not be measured is absent, never zero. ``sources`` says which tool gave what.
    """

    axes: dict[str, int]
    metrics: dict[str, float | int | bool | str] = Field(default_factory=dict)
    kernels: tuple[KernelStat, ...] = ()
    sources: dict[str, str] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------- curriculum


class DecisionRow(Record):
    """One decision the coder implements: what, which lever, what it should do."""

    id: str
    decision: str
    lever: str = ""
    predict: str = ""
    status: Literal["open", "done", "failed", "dropped"] = "open"
    params: dict[str, Any] = Field(default_factory=dict)
    """Backend-specific hints (the built-in agent reads template names and knobs here)."""


class Gate(Record):
    """Closes a milestone: correctness, a performance line and mechanism lines."""

    correct: bool = True
    performance: str = ""
    mechanism: tuple[str, ...] = ()


class Milestone(Record):
    id: str
    kind: Literal["architecture", "tuning"] = "tuning"
    title: str = ""
    frozen: bool = False
    rows: tuple[DecisionRow, ...] = ()
    gate: Gate = Field(default_factory=Gate)
    status: Literal["open", "passed", "abandoned"] = "open"


class Curriculum(Record):
    version: int = 1
    reason: str = ""
    milestones: tuple[Milestone, ...] = ()


# ---------------------------------------------------------------- run record


class AgentCost(Record):
    agent: str
    model: str = ""
    dollars: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Of the input tokens, those read from the provider's prompt cache (billed lower)."""
    cache_write_tokens: int = 0
    """Of the input tokens, those written to the prompt cache (Anthropic bills them higher)."""
    turns: int = 0
    session: str = ""


class AttemptOutcome(enum.StrEnum):
    """How an attempt ended (closed): judged, or stopped before judging because the agent
    failed (or made no edit), the candidate was already judged, or forge itself failed."""

    JUDGED = "judged"
    AGENT_ERROR = "agent_error"
    DUPLICATE = "duplicate"
    INTERNAL_ERROR = "internal_error"

    @property
    def prefix(self) -> str:
        """How its error message starts (what ledgers before ``outcome`` said it with)."""
        return {"agent_error": "agent error: ", "duplicate": "duplicate of attempt ",
                "internal_error": "internal error: "}.get(self.value, "")


class Attempt(Record):
    """One line of ledger.jsonl: an attempt and its outcome (``error``: the failure before
    judging, starting with its outcome's prefix; make one with :meth:`failed`)."""

    seq: int
    time: str
    milestone: str = ""
    row: str = ""
    candidate: str = ""
    agent: AgentCost
    verdict: Verdict | None = None
    outcome: AttemptOutcome = AttemptOutcome.JUDGED
    error: str = ""
    accepted: bool = False
    best: bool = False

    @model_validator(mode="before")
    @classmethod
    def _outcome_of_old_lines(cls, data: Any) -> Any:
        """A line written before ``outcome`` existed says it with its error's prefix."""
        if isinstance(data, dict) and "outcome" not in data and not data.get("verdict"):
            error = str(data.get("error") or "")
            found = [o for o in AttemptOutcome if o.prefix and error.startswith(o.prefix)]
            data = {**data, "outcome": found[0] if found else AttemptOutcome.INTERNAL_ERROR}
        return data

    @classmethod
    def failed(cls, outcome: AttemptOutcome, detail: str, **fields: Any) -> Attempt:
        return cls(outcome=outcome, error=outcome.prefix + detail, **fields)

    @property
    def detail(self) -> str:
        """The error without its outcome's prefix."""
        return self.error.removeprefix(self.outcome.prefix)
