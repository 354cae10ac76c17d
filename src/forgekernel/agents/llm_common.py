"""The shared tool-use loop behind the ``anthropic`` and ``openai`` backends.

A backend supplies a :class:`Chat`: one API call per :meth:`Chat.step`, messages kept in its
own wire format, SDK errors translated with :func:`api_error`. This module runs the loop
(bounded turns and tokens, retries with exponential backoff on transient errors), prices
token usage, and implements the two roles on top of it: :class:`LoopCoder` (edits
``kernel.py`` through :mod:`forgekernel.agents.tools`) and :class:`LoopArchitect` (submits
``curriculum.toml``; an invalid one goes back to the model with the validation errors).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from forgekernel import curriculum as curriculum_io
from forgekernel.agents import prompting
from forgekernel.agents.base import (
    AgentError,
    ArchitectContext,
    ArchitectResult,
    CoderContext,
    CoderResult,
)
from forgekernel.agents.tools import Tool, ToolBox, ToolOutcome, coder_tools, schema
from forgekernel.prices import dollars
from forgekernel.records import AgentCost, Curriculum

TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class Limits:
    """Bounds of one agent call."""

    max_turns: int = 30
    """Model requests per coder row or architect plan."""
    max_tokens: int = 16_000
    """Output tokens per response."""
    max_total_tokens: int = 2_000_000
    """Input + output tokens per call; the loop stops when it is passed."""
    retries: int = 5
    """Retries of one request on a transient error (429, 5xx, connection)."""
    backoff_s: float = 2.0
    backoff_max_s: float = 60.0
    timeout_s: float = 600.0
    """HTTP timeout of one request."""
    check_timeout_s: float = 300.0
    max_invalid: int = 3
    """Invalid curricula returned to the architect with their errors; one more fails it."""
    nudges: int = 2
    """Text-only replies answered with a reminder to use the tools before the loop ends."""
    price: tuple[float, float] | None = None
    """USD per million input and output tokens given by the user (None: the price table's)."""


class CallFailed(Exception):
    """An API call failed for this attempt (after retries); the next attempt may succeed."""


class Transient(CallFailed):
    """Worth retrying: rate limit, overload, server error, lost connection."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def api_error(provider: str, status: int | None, message: str, model: str,
              key_name: str, retry_after: float | None = None) -> Exception:
    """The exception for an API error: AgentError for auth and unknown model, else CallFailed."""
    message = " ".join(str(message).split())[:300]
    if status is None or status in TRANSIENT_STATUS:
        return Transient(f"{provider} API: {message}" + (f" ({status})" if status else ""),
                         retry_after)
    if status in (401, 403):
        return AgentError(f"{provider} API: authentication failed ({status}): {message}; "
                          f"check {key_name} (see forge doctor)")
    if status == 404:
        return AgentError(f"{provider} API: model '{model}' not found ({status}): {message}; "
                          "pick another with --model / FK_MODEL")
    return CallFailed(f"{provider} API: request rejected ({status}): {message}")


def with_cost(exc: AgentError, cost: AgentCost) -> AgentError:
    """Attach what the failed call cost (``exc.cost``) so the engine can still account it."""
    exc.cost = cost  # type: ignore[attr-defined]
    return exc


def retry_after(exc: Any) -> float | None:
    """Seconds an SDK error's Retry-After header asks for, if any."""
    value = exc.response.headers.get("retry-after") if getattr(exc, "response", None) else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def limits_from(kw: dict[str, Any]) -> Limits:
    """A :class:`Limits` from ``limits=`` and/or field overrides in a factory's keywords."""
    base = kw.pop("limits", None) or Limits()
    fields = {k: kw.pop(k) for k in list(kw) if k in Limits.__dataclass_fields__}
    return dataclasses.replace(base, **fields)


def priced(limits: Limits, settings: Any, model: str) -> Limits:
    """``limits`` with the user's price (``--price``/``FK_PRICE``); an AgentError when neither
    the user nor the price table prices ``model`` (a dollar budget must be enforceable)."""
    from forgekernel import prices

    given = limits.price
    if given is None and getattr(settings, "price", None):
        given = prices.parse(settings.price)
    problem = prices.missing(model, given)
    if problem:
        raise AgentError(problem)
    return dataclasses.replace(limits, price=given)


def with_retries(call: Callable[[], Any], limits: Limits,
                 sleep: Callable[[float], None] = time.sleep) -> Any:
    """Run ``call``; on :class:`Transient` wait (exponential backoff) and try again."""
    for attempt in range(limits.retries + 1):
        try:
            return call()
        except Transient as exc:
            if attempt == limits.retries:
                raise CallFailed(f"{exc} (gave up after {limits.retries} retries)") from None
            delay = min(limits.backoff_max_s, limits.backoff_s * 2 ** attempt)
            if exc.retry_after is not None:
                delay = min(limits.backoff_max_s, max(delay, exc.retry_after))
            sleep(delay)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class ToolRequest:
    """A tool call the model made; ``args`` is None when its JSON did not parse."""

    id: str
    name: str
    args: dict[str, Any] | None


@dataclass(frozen=True)
class Reply:
    """One model response, provider-neutral."""

    text: str
    calls: tuple[ToolRequest, ...]
    input_tokens: int
    """Every input token of the request, cached ones included."""
    output_tokens: int
    stop: str = ""
    cache_read: int = 0
    cache_write: int = 0


class Chat(Protocol):
    """A conversation with one provider, in that provider's message format."""

    provider: str
    model: str

    def reset(self, system: str, user: str) -> None: ...

    def step(self, tools: list[Tool]) -> Reply: ...

    def add_results(self, reply: Reply, results: list[tuple[ToolRequest, ToolOutcome]]) -> None: ...

    def add_user(self, text: str) -> None: ...

    def close(self) -> None: ...


@dataclass
class Tally:
    """Running usage of one agent call (kept even when the call fails)."""

    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    notes: list[str] = field(default_factory=list)
    price: tuple[float, float] | None = None
    """USD per million input and output tokens given by the user (None: the price table's)."""

    def add(self, reply: Reply) -> None:
        self.turns += 1
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cache_read += reply.cache_read
        self.cache_write += reply.cache_write

    def cost(self, agent: str, model: str) -> AgentCost:
        """What the call cost, at the user's ``price`` or the table's (cached input at the
        model's cache rates)."""
        usd = dollars(model, self.input_tokens, self.output_tokens, self.price,
                      cache_read=self.cache_read, cache_write=self.cache_write)
        return AgentCost(agent=agent, model=model, dollars=usd, input_tokens=self.input_tokens,
                         output_tokens=self.output_tokens, cache_read_tokens=self.cache_read,
                         cache_write_tokens=self.cache_write, turns=self.turns)


@dataclass(frozen=True)
class LoopOutcome:
    finished: bool
    summary: str
    last_text: str


def run_loop(chat: Chat, box: ToolBox, limits: Limits, tally: Tally, nudge: str,
             sleep: Callable[[float], None] = time.sleep, budget: float | None = None) -> LoopOutcome:
    """Ask, run the tools asked for, repeat until ``finish``, the turn or token bound, or (with
    ``budget``) until the calls have cost that many dollars."""
    nudges, last_text = 0, ""
    while tally.turns < limits.max_turns:
        reply = with_retries(lambda: chat.step(box.specs()), limits, sleep)
        tally.add(reply)
        last_text = reply.text or last_text
        spent = tally.cost("", chat.model).dollars
        if budget is not None and spent >= budget:
            tally.notes.append(f"stopped: the run's dollar budget was spent within the row (${spent:.2f})")
            return LoopOutcome(False, last_text.strip(), last_text)
        if not reply.calls:
            if nudges >= limits.nudges:
                return LoopOutcome(False, last_text.strip(), last_text)
            nudges += 1
            chat.add_user(nudge)
            continue
        results = [(c, box.call(c.name, c.args) if c.args is not None else
                    ToolOutcome(f"{c.name}: arguments were not valid JSON (output cut?)", True))
                   for c in reply.calls]
        chat.add_results(reply, results)
        for call, out in results:
            if out.done:
                return LoopOutcome(True, str((call.args or {}).get("summary", "")), last_text)
        if tally.input_tokens + tally.output_tokens > limits.max_total_tokens:
            tally.notes.append(f"stopped: token bound {limits.max_total_tokens} passed")
            return LoopOutcome(False, last_text.strip(), last_text)
    tally.notes.append(f"stopped: {limits.max_turns} turns without finish")
    return LoopOutcome(False, last_text.strip(), last_text)


LOOP_TOOLS_NOTE = ("Tools: read_file, write_file, edit_file, list_files, run_check and run_profile "
                   "(when offered) and finish. Paths are relative to the workspace. Make the edits with the "
                   "tools, not in your reply text.")


class LoopCoder:
    """Coder role over a :class:`Chat`: one fresh conversation per row."""

    def __init__(self, name: str, new_chat: Callable[[], Chat], limits: Limits,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.name, self.new_chat, self.limits, self.sleep = name, new_chat, limits, sleep

    def implement(self, ctx: CoderContext) -> CoderResult:
        chat = self.new_chat()
        check = " ".join(filter(None, (
            "Run `run_check` to compile and check correctness on the small workloads "
            "before you finish." if ctx.check_command else "",
            "Measure with `run_profile` (times, floors, %SOL, launches, registers, spills) "
            "before you finish, and compare with the best so far." if ctx.profile_command else "")))
        user = prompting.coder_prompt(ctx, prompting.coder_instructions(
            ctx, check, "Then call `finish` with a one-line summary."))
        chat.reset(prompting.coder_system(ctx.task, LOOP_TOOLS_NOTE), user)
        box = coder_tools(ctx.workspace, ctx.check_command, self.limits.check_timeout_s,
                          ctx.profile_command)
        tally = Tally(price=self.limits.price)
        try:
            out = run_loop(chat, box, self.limits, tally, "Use the tools to edit kernel.py, "
                           "then call finish.", self.sleep, ctx.dollars_left)
        except CallFailed as exc:
            return CoderResult(summary="", cost=tally.cost(self.name, chat.model), error=str(exc))
        except AgentError as exc:
            raise with_cost(exc, tally.cost(self.name, chat.model)) from None
        finally:
            chat.close()
        cost = tally.cost(self.name, chat.model)
        summary = out.summary or ("(no summary)" if out.finished else "(did not call finish)")
        return CoderResult(summary="; ".join([summary, *tally.notes]), cost=cost)


def architect_tools(found: dict[str, Curriculum], max_invalid: int, agent: str) -> ToolBox:
    """``submit_curriculum``: validate; errors go back to the model up to ``max_invalid``
    times, the next invalid submission is an AgentError."""
    invalid: list[str] = []

    def submit(args: dict[str, Any]) -> ToolOutcome:
        try:
            found["curriculum"] = curriculum_io.loads(args["toml"])
        except curriculum_io.CurriculumError as exc:
            invalid.append(str(exc))
            if len(invalid) > max_invalid:
                raise AgentError(f"{agent} architect: {len(invalid)} invalid curricula; the last: "
                                 f"{' | '.join(str(exc).splitlines())}") from None
            return ToolOutcome(f"invalid curriculum, fix and submit again:\n{exc}", True)
        return ToolOutcome("curriculum accepted", done=True)

    return ToolBox([Tool("submit_curriculum", "Submit the complete curriculum.toml text; it is "
                         "validated and any problems are returned to you.",
                         schema(["toml", "summary"], toml="the complete curriculum in TOML",
                                summary="one or two sentences: the plan and why"), submit)])


class LoopArchitect:
    """Architect role over a :class:`Chat`: plans until a valid curriculum is submitted."""

    def __init__(self, name: str, new_chat: Callable[[], Chat], limits: Limits,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.name, self.new_chat, self.limits, self.sleep = name, new_chat, limits, sleep

    def plan(self, ctx: ArchitectContext) -> ArchitectResult:
        chat = self.new_chat()
        note = "Tool: submit_curriculum(toml, summary). Submit the whole file with it."
        chat.reset(prompting.architect_system(ctx.task, note), prompting.architect_prompt(
            ctx, "Write the curriculum and submit it with `submit_curriculum`."))
        found: dict[str, Curriculum] = {}
        box = architect_tools(found, self.limits.max_invalid, self.name)
        tally = Tally(price=self.limits.price)
        try:
            out = run_loop(chat, box, self.limits, tally, "Submit the curriculum with "
                           "submit_curriculum.", self.sleep)
        except CallFailed as exc:
            raise with_cost(AgentError(f"{self.name} architect: {exc}"),
                            tally.cost(self.name, chat.model)) from None
        except AgentError as exc:
            raise with_cost(exc, tally.cost(self.name, chat.model)) from None
        finally:
            chat.close()
        cost = tally.cost(self.name, chat.model)
        if "curriculum" not in found:
            said = " ".join(out.last_text.split())[:300]
            why = "; ".join([f"the model's last words: {said!r}" if said else "the model wrote no text",
                             *tally.notes])
            raise with_cost(AgentError(f"{self.name} architect: no curriculum submitted after "
                                       f"{tally.turns} turns ({why})"), cost)
        return ArchitectResult(curriculum=found["curriculum"], cost=cost,
                               notes="; ".join([out.summary, *tally.notes]).strip("; "))


ChatFactory = Callable[[Any, dict[str, Any]], tuple[Callable[[], Chat], Limits]]


def loop_coder(name: str, chat_factory: ChatFactory, settings: Any, kw: dict[str, Any]) -> LoopCoder:
    """A backend's ``make_coder``: its chat factory, the options it reads, ``sleep``."""
    sleep = kw.pop("sleep", time.sleep)
    factory, limits = chat_factory(settings, kw)
    return LoopCoder(name, factory, limits, sleep)


def loop_architect(name: str, chat_factory: ChatFactory, settings: Any, kw: dict[str, Any]) -> LoopArchitect:
    """A backend's ``make_architect``; same options as :func:`loop_coder`."""
    sleep = kw.pop("sleep", time.sleep)
    factory, limits = chat_factory(settings, kw)
    return LoopArchitect(name, factory, limits, sleep)
