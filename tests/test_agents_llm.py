"""The anthropic and openai backends: the real SDKs against the loopback fake servers."""

from __future__ import annotations

import json

import pytest

from forgekernel.agents import anthropic_api, openai_api
from forgekernel.agents.base import AgentError
from forgekernel.fakes import FakeAnthropic, FakeOpenAI
from forgekernel.prices import PRICES
from llm_agent_support import START_KERNEL, architect_ctx, coder_ctx, settings, workspace

BACKENDS = {"anthropic": (anthropic_api, FakeAnthropic), "openai": (openai_api, FakeOpenAI)}

NEW_LINE = "    return x * weight"


def edit_script(usage=(1000, 100)):
    u = {"input_tokens": usage[0], "output_tokens": usage[1]}
    return [
        {"text": "Reading the kernel.", "usage": u,
         "tool_calls": [{"name": "read_file", "input": {"path": "kernel.py"}}]},
        {"usage": u, "tool_calls": [{"name": "edit_file", "input": {
            "path": "kernel.py", "old_string": "    return x  # TODO", "new_string": NEW_LINE}}]},
        {"usage": u, "tool_calls": [{"name": "run_check", "input": {}}]},
        {"text": "Done.", "usage": u,
         "tool_calls": [{"name": "finish", "input": {"summary": "scaled by weight"}}]},
    ]


def make(kind, srv, model="claude-sonnet-4-5", **kw):
    module, _ = BACKENDS[kind]
    base = srv.url + ("/v1" if kind == "openai" else "")
    kw.setdefault("sleep", lambda s: None)
    return module.make_coder(settings(model=model), api_key="dummy", base_url=base, **kw)


def tool_results(srv, kind):
    """Tool results the client sent back, per scripted request (provider-neutral text)."""
    out = []
    for r in srv.scripted():
        last = r.body["messages"][-1]
        if kind == "anthropic" and isinstance(last["content"], list):
            out.append([b["content"] for b in last["content"] if b["type"] == "tool_result"])
        elif kind == "openai":
            tail = []
            for m in reversed(r.body["messages"]):
                if m["role"] != "tool":
                    break
                tail.insert(0, m["content"])
            out.append(tail)
        else:
            out.append([])
    return out


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("kind", BACKENDS)
def test_coder_edits_kernel_through_tools(tmp_path, kind, stream):
    ws = workspace(tmp_path)
    model = "claude-sonnet-4-5" if kind == "anthropic" else "gpt-4.1"
    with BACKENDS[kind][1](edit_script(), api_key="dummy") as srv:
        res = make(kind, srv, model=model, stream=stream).implement(coder_ctx(ws))
    assert res.error == ""
    assert (ws / "kernel.py").read_text() == START_KERNEL.replace("    return x  # TODO", NEW_LINE)
    assert res.summary.startswith("scaled by weight")
    assert srv.remaining == 0 and not srv.errors
    assert all(r.body.get("stream", False) is stream for r in srv.scripted())
    results = tool_results(srv, kind)
    assert "return x  # TODO" in results[1][0]  # read_file returned the file
    assert "check sees 42" in results[3][0]  # run_check ran the edited kernel
    assert (res.cost.input_tokens, res.cost.output_tokens, res.cost.turns) == (4000, 400, 4)
    inp, out = PRICES["claude-sonnet-4" if kind == "anthropic" else "gpt-4.1"]
    assert res.cost.dollars == pytest.approx((4000 * inp + 400 * out) / 1e6)
    assert res.cost.agent == kind and res.cost.model == model


@pytest.mark.parametrize("kind", BACKENDS)
def test_prompt_carries_task_row_and_tools(tmp_path, kind):
    ws = workspace(tmp_path)
    with BACKENDS[kind][1]([{"tool_calls": [{"name": "finish", "input": {"summary": "s"}}]}]) as srv:
        make(kind, srv).implement(coder_ctx(ws, feedback="max_rel_err 0.3 at M=7 N=384"))
    body = srv.scripted()[0].body
    text = json.dumps(body)
    for needle in ("rmsnorm", "M0.1", "one program per row", "launches == 1", "max_rel_err 0.3",
                   "keep the row in registers", "forgot eps", "torch.rsqrt(variance + EPS)"):
        assert needle in text, needle
    names = ([t["name"] for t in body["tools"]] if kind == "anthropic"
             else [t["function"]["name"] for t in body["tools"]])
    assert names == ["read_file", "write_file", "edit_file", "list_files", "run_check", "finish"]


@pytest.mark.parametrize("kind", BACKENDS)
def test_transient_errors_retry_with_backoff(tmp_path, kind):
    ws = workspace(tmp_path)
    delays: list[float] = []
    script = [{"error": 429, "message": "slow down"}, {"error": 503}, {"error": 500},
              {"tool_calls": [{"name": "finish", "input": {"summary": "ok"}}]}]
    with BACKENDS[kind][1](script) as srv:
        res = make(kind, srv, sleep=delays.append, backoff_s=0.5).implement(coder_ctx(ws))
    assert res.error == "" and res.summary.startswith("ok")
    assert delays == [0.5, 1.0, 2.0]
    assert len(srv.scripted()) == 4


@pytest.mark.parametrize("kind", BACKENDS)
def test_retries_are_bounded_and_become_an_attempt_error(tmp_path, kind):
    ws = workspace(tmp_path)
    with BACKENDS[kind][1]([{"error": 500, "message": "boom"}] * 3) as srv:
        res = make(kind, srv, retries=2).implement(coder_ctx(ws))
    assert "gave up after 2 retries" in res.error and "boom" in res.error
    assert srv.remaining == 0


@pytest.mark.parametrize("kind", BACKENDS)
def test_auth_failure_is_one_line_agent_error(tmp_path, kind):
    ws = workspace(tmp_path)
    with BACKENDS[kind][1]([], api_key="the-right-key") as srv:
        with pytest.raises(AgentError, match=r"authentication failed \(401\)") as info:
            make(kind, srv).implement(coder_ctx(ws))
    assert "\n" not in str(info.value)
    assert len(srv.requests) == 1  # no retry on 401


@pytest.mark.parametrize("kind", BACKENDS)
def test_unknown_model_is_agent_error(tmp_path, kind):
    ws = workspace(tmp_path)
    with BACKENDS[kind][1]([{"error": 404, "message": "model: nope-1"}]) as srv:
        with pytest.raises(AgentError, match=r"model 'nope-1' not found \(404\)"):
            make(kind, srv, model="nope-1", price=(0.0, 0.0)).implement(coder_ctx(ws))


@pytest.mark.parametrize("kind", BACKENDS)
def test_turns_are_bounded(tmp_path, kind):
    ws = workspace(tmp_path)
    loop = [{"tool_calls": [{"name": "read_file", "input": {"path": "kernel.py"}}]}] * 5
    with BACKENDS[kind][1](loop) as srv:
        res = make(kind, srv, max_turns=3).implement(coder_ctx(ws))
    assert len(srv.scripted()) == 3
    assert "3 turns without finish" in res.summary
    assert res.cost.turns == 3


@pytest.mark.parametrize("kind", BACKENDS)
def test_text_only_replies_get_nudged_then_end(tmp_path, kind):
    ws = workspace(tmp_path)
    with BACKENDS[kind][1]([{"text": "I would change it."}] * 3) as srv:
        res = make(kind, srv).implement(coder_ctx(ws))
    assert "did not call finish" not in res.summary and "I would change it." in res.summary
    assert len(srv.scripted()) == 3
    assert "call finish" in json.dumps(srv.scripted()[1].body["messages"][-1])


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_model_without_a_price_needs_one_from_the_user(tmp_path, kind):
    ws = workspace(tmp_path)
    with BACKENDS[kind][1]([]) as srv, pytest.raises(AgentError) as info:
        make(kind, srv, model="my-local-llama")
    assert "no price known for model 'my-local-llama'" in str(info.value) and "--price" in str(info.value)
    step = {"usage": {"input_tokens": 1_000_000, "output_tokens": 500_000},
            "tool_calls": [{"name": "finish", "input": {"summary": "s"}}]}
    module = BACKENDS[kind][0]
    with BACKENDS[kind][1]([step]) as srv:
        coder = module.make_coder(settings(model="my-local-llama", price="0.5, 2"), api_key="dummy",
                                  base_url=srv.url + ("/v1" if kind == "openai" else ""))
        res = coder.implement(coder_ctx(ws))
    assert res.cost.dollars == pytest.approx(0.5 + 1.0) and res.cost.input_tokens == 1_000_000
    assert res.summary == "s"  # bookkeeping stays out of what the next prompts show


@pytest.mark.parametrize("kind", BACKENDS)
def test_workspace_escapes_are_refused_and_reported(tmp_path, kind):
    ws = workspace(tmp_path)
    (tmp_path / "secret.txt").write_text("hidden workloads")
    (ws / "link").symlink_to(tmp_path / "secret.txt")
    bad = [("read_file", {"path": "../secret.txt"}), ("read_file", {"path": str(tmp_path / "secret.txt")}),
           ("read_file", {"path": "link"}), ("write_file", {"path": "../evil.py", "content": "x"}),
           ("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}),
           ("edit_file", {"path": "kernel.py", "old_string": "absent", "new_string": "y"})]
    script = [{"tool_calls": [{"name": n, "input": a} for n, a in bad]},
              {"tool_calls": [{"name": "finish", "input": {"summary": "s"}}]}]
    with BACKENDS[kind][1](script) as srv:
        make(kind, srv).implement(coder_ctx(ws))
    results = tool_results(srv, kind)[1]
    assert len(results) == len(bad)
    assert not any("hidden workloads" in r for r in results)
    assert not (tmp_path / "evil.py").exists() and not (ws / ".git").exists()
    assert (ws / "kernel.py").read_text() == START_KERNEL
    if kind == "anthropic":
        flags = [b["is_error"] for b in srv.scripted()[1].body["messages"][-1]["content"]]
        assert flags == [True] * len(bad)
    else:
        assert all(r.startswith("ERROR: ") for r in results)


def architect_script(bad_times: int, good: str):
    bad = {"tool_calls": [{"name": "submit_curriculum",
                           "input": {"toml": "[[milestone]]\nid = 'M0'\nkind = 'tuning'\n",
                                     "summary": "draft"}}]}
    ok = {"tool_calls": [{"name": "submit_curriculum", "input": {"toml": good, "summary": "plan"}}]}
    return [bad] * bad_times + [ok]


@pytest.mark.parametrize("kind", BACKENDS)
def test_architect_gets_validation_errors_back_then_succeeds(kind):
    from llm_agent_support import PLAN

    module, fake = BACKENDS[kind]
    with fake(architect_script(1, PLAN)) as srv:
        arch = module.make_architect(settings(model="claude-sonnet-4-5"), api_key="k",
                                     base_url=srv.url + ("/v1" if kind == "openai" else ""))
        res = arch.plan(architect_ctx())
    assert [m.id for m in res.curriculum.milestones] == ["M0"]
    assert res.cost.turns == 2 and res.notes.startswith("plan")
    second = json.dumps(srv.scripted()[1].body["messages"][-1])
    assert "must have kind = 'architecture'" in second and "has no row" in second
    first = json.dumps(srv.scripted()[0].body)
    assert "speedup >= 3" in first and "dram_pct" in first  # format example + metric names


@pytest.mark.parametrize("kind", BACKENDS)
def test_architect_fails_after_bounded_invalid_curricula(kind):
    from llm_agent_support import PLAN

    module, fake = BACKENDS[kind]
    with fake(architect_script(3, PLAN)) as srv:
        arch = module.make_architect(settings(model="m", price="0,0"), api_key="k", max_invalid=2,
                                     base_url=srv.url + ("/v1" if kind == "openai" else ""))
        with pytest.raises(AgentError, match="3 invalid curricula") as info:
            arch.plan(architect_ctx())
    assert info.value.cost.turns == 3
    assert srv.remaining == 1


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_planner_that_never_submits_is_reported_with_its_own_words(kind):
    module, fake = BACKENDS[kind]
    talk = [{"text": "I think a row-wise kernel is best.", "usage": {"input_tokens": 3, "output_tokens": 2}}]
    with fake(talk * 3) as srv:
        arch = module.make_architect(settings(model="my-local-llama", price="0,0"), api_key="k", max_turns=3,
                                     base_url=srv.url + ("/v1" if kind == "openai" else ""))
        with pytest.raises(AgentError) as info:
            arch.plan(architect_ctx())
    text = str(info.value)
    assert "no curriculum submitted after 3 turns" in text
    assert "I think a row-wise kernel is best." in text and "price" not in text


def test_prompts_never_show_hidden_workloads_and_fill_every_placeholder(tmp_path):
    from forgekernel.agents import prompting
    from forgekernel.records import Profile
    from llm_agent_support import HIDDEN, task

    spec = task(hidden=True)
    ws = workspace(tmp_path)
    profiles = (Profile(axes={"M": 16, "N": 256}, metrics={"launches": 9}),
                Profile(axes=HIDDEN.axes, metrics={"launches": 9, "median_ms": 0.125}))
    ctx = coder_ctx(ws, task=spec, profiles=profiles)
    texts = [prompting.coder_prompt(ctx, "do it"), prompting.coder_prompt(ctx, "do it", brief=True),
             prompting.coder_system(spec, "tools"), prompting.architect_system(spec, "tools"),
             prompting.architect_prompt(architect_ctx(task=spec, profiles=profiles), "plan")]
    for text in texts:
        assert "777" not in text and "0.125" not in text and "seed" not in text.lower()
        assert "$" not in text.replace("$0", "")  # no placeholder left unfilled
    assert "M=16 x N=256 (smoke)" in texts[0] and "launches=9" in texts[0]
    assert "M=65536 x N=1024" in texts[0]  # visible GPU workloads are shown


def test_tool_box_reports_bad_calls_as_errors(tmp_path):
    from forgekernel.agents.tools import coder_tools

    ws = workspace(tmp_path)
    box = coder_tools(ws)
    assert box.call("nope", {}).is_error
    assert box.call("read_file", {}).is_error  # missing argument
    assert box.call("read_file", ["kernel.py"]).is_error
    assert "run_check" not in box.tools  # no check command, no tool
    assert not box.call("write_file", {"path": "sub/helper.py", "content": "X = 1\n"}).is_error
    assert (ws / "sub" / "helper.py").read_text() == "X = 1\n"
    assert box.call("list_files", {}).text.splitlines() == ["kernel.py", "sub/helper.py"]
    (ws / "kernel.py").write_text("a\na\n")
    out = box.call("edit_file", {"path": "kernel.py", "old_string": "a", "new_string": "b"})
    assert out.is_error and "found 2 times" in out.text
    assert box.call("finish", {"summary": "x"}).done


def test_check_command_timeout_kills_it(tmp_path):
    import sys

    from forgekernel.agents.tools import coder_tools

    ws = workspace(tmp_path)
    box = coder_tools(ws, (sys.executable, "-c", "import time; print('start', flush=True); time.sleep(60)"),
                      check_timeout_s=1)
    out = box.call("run_check", {})
    assert out.is_error and "timed out after 1 s" in out.text and "start" in out.text


def test_openai_compatible_server_model_is_discovered(tmp_path):
    ws = workspace(tmp_path)
    with FakeOpenAI([{"tool_calls": [{"name": "finish", "input": {"summary": "s"}}]}]) as srv:
        coder = openai_api.make_coder(settings(openai_base_url=srv.url + "/v1", price="0,0"), sleep=lambda s: None)
        res = coder.implement(coder_ctx(ws))
    assert srv.paths()[0] == "GET /v1/models"
    assert srv.scripted()[0].body["model"] == "fake" == res.cost.model
    assert "max_tokens" in srv.scripted()[0].body and "stream" not in srv.scripted()[0].body


class _Minimal:
    """A bare OpenAI-compatible server written without our fakes: no /models, no usage,
    tool-call arguments as an object, no tool-call ids (as some local servers answer)."""

    def __init__(self, replies):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.replies, self.bodies = list(replies), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                outer.bodies.append(json.loads(self.rfile.read(n)))
                self._send(200, {"choices": [{"index": 0, "finish_reason": "tool_calls",
                                              "message": outer.replies.pop(0)}]})

            def do_GET(self):
                self._send(404, {"detail": "not here"})

            def _send(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_openai_backend_tolerates_a_minimal_compatible_server(tmp_path):
    ws = workspace(tmp_path)
    replies = [{"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {
                   "name": "write_file", "arguments": {"path": "kernel.py", "content": "X = 2\n"}}}]},
               {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                   "name": "finish", "arguments": "{\"summary\": \"wrote it\"}"}}]}]
    server = _Minimal(replies)
    with server as url:
        res = openai_api.make_coder(settings(openai_base_url=url, price="0,0")).implement(coder_ctx(ws))
    assert (ws / "kernel.py").read_text() == "X = 2\n"
    assert res.error == "" and res.summary.startswith("wrote it")
    assert server.bodies[0]["model"] == "default"  # no /models: the server picks its model
    echoed = server.bodies[1]["messages"][-2]["tool_calls"][0]
    assert json.loads(echoed["function"]["arguments"])["content"] == "X = 2\n"
    assert server.bodies[1]["messages"][-1]["tool_call_id"] == echoed["id"]


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_row_stops_once_its_calls_spend_what_is_left_of_the_budget(tmp_path, kind):
    ws = workspace(tmp_path)
    turn = {"text": "thinking", "usage": {"input_tokens": 1_000_000, "output_tokens": 0},
            "tool_calls": [{"name": "list_files", "input": {}}]}
    with BACKENDS[kind][1]([turn] * 5) as srv:
        coder = make(kind, srv, model="my-local-llama", price=(1.0, 0.0))
        res = coder.implement(coder_ctx(ws, dollars_left=1.5))
    assert len(srv.scripted()) == 2 and res.cost.dollars == pytest.approx(2.0)
    assert "dollar budget was spent within the row" in res.summary


def _make_with(kind, srv, model, **settings_kw):
    module, _ = BACKENDS[kind]
    base = srv.url + ("/v1" if kind == "openai" else "")
    return module.make_coder(settings(model=model, **settings_kw), api_key="dummy", base_url=base,
                             sleep=lambda s: None)


def test_anthropic_requests_mark_cache_breakpoints_and_cached_tokens_are_billed_at_cache_rates(tmp_path):
    """The system prompt (tools before it) and the newest message are cache breakpoints on
    every turn, the history keeps no marks, and cache reads/writes cost what Anthropic bills."""
    ws = workspace(tmp_path)
    cached = {"input_tokens": 1000, "output_tokens": 100, "cache_read": 600, "cache_write": 300}
    script = [{**s, "usage": cached} for s in edit_script()]
    with FakeAnthropic(script, api_key="dummy") as srv:
        res = make("anthropic", srv).implement(coder_ctx(ws))
    assert res.error == "" and srv.remaining == 0
    for r in srv.scripted():
        body = r.body
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        marks = [m for m in body["messages"] if isinstance(m["content"], list)
                 and any("cache_control" in b for b in m["content"] if isinstance(b, dict))]
        assert marks == [body["messages"][-1]]  # one rolling breakpoint: the newest message
    # per turn: 1000 fresh + 600 read + 300 written input tokens
    assert (res.cost.input_tokens, res.cost.cache_read_tokens, res.cost.cache_write_tokens) == (7600, 2400, 1200)
    inp, out = PRICES["claude-sonnet-4"]
    billed_in = 4000 + 2400 * 0.1 + 1200 * 1.25
    assert res.cost.dollars == pytest.approx((billed_in * inp + 400 * out) / 1e6)


def test_openai_cached_prompt_tokens_are_billed_at_the_cached_rate(tmp_path):
    ws = workspace(tmp_path)
    script = [{**s, "usage": {"input_tokens": 1000, "output_tokens": 100, "cached_tokens": 800}}
              for s in edit_script()]
    with FakeOpenAI(script, api_key="dummy") as srv:
        res = make("openai", srv, model="gpt-4.1").implement(coder_ctx(ws))
    assert res.error == "" and res.cost.cache_read_tokens == 3200 and res.cost.input_tokens == 4000
    inp, out = PRICES["gpt-4.1"]
    assert res.cost.dollars == pytest.approx(((800 + 3200 * 0.25) * inp + 400 * out) / 1e6)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_effort_turns_on_extended_thinking_and_the_thinking_is_sent_back(tmp_path, stream):
    """With --effort the request enables thinking within max_tokens (the fake refuses what the
    API refuses), and the thinking block goes back with the tool results, as the API needs."""
    ws = workspace(tmp_path)
    script = [{**s, "thinking": f"step {i}: consider the row reduction"} for i, s in enumerate(edit_script())]
    with FakeAnthropic(script, api_key="dummy") as srv:
        coder = anthropic_api.make_coder(settings(model="claude-sonnet-4-5", effort="high"),
                                         api_key="dummy", base_url=srv.url, sleep=lambda s: None,
                                         stream=stream)
        res = coder.implement(coder_ctx(ws))
    assert res.error == "" and srv.remaining == 0 and not srv.errors
    first, second = srv.scripted()[0].body, srv.scripted()[1].body
    assert first["thinking"] == {"type": "enabled", "budget_tokens": anthropic_api.THINKING_TOKENS["high"]}
    assert first["max_tokens"] > first["thinking"]["budget_tokens"]
    sent_back = second["messages"][1]["content"]
    assert sent_back[0]["type"] == "thinking" and sent_back[0]["signature"] == "fake-sig-0"


def test_the_fake_refuses_a_thinking_budget_the_api_would_refuse():
    from forgekernel.fakes.anthropic import _bad_thinking

    ok = {"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 8000}
    assert _bad_thinking(ok) == ""
    assert "greater than" in _bad_thinking({**ok, "max_tokens": 2048})
    assert "1024" in _bad_thinking({**ok, "thinking": {"type": "enabled", "budget_tokens": 10}})
    assert "temperature" in _bad_thinking({**ok, "temperature": 0.2})


def test_effort_sets_openai_reasoning_effort_only_when_asked(tmp_path):
    finish = [{"tool_calls": [{"name": "finish", "input": {"summary": "s"}}]}]
    bodies = []
    for effort in (None, "low"):
        (tmp_path / str(effort)).mkdir()
        with FakeOpenAI(finish, api_key="dummy") as srv:
            coder = _make_with("openai", srv, "gpt-5-mini", effort=effort)
            coder.implement(coder_ctx(workspace(tmp_path / str(effort))))
        bodies.append(srv.scripted()[0].body)
    assert "reasoning_effort" not in bodies[0] and bodies[1]["reasoning_effort"] == "low"


def test_an_unknown_effort_is_a_one_line_config_error(tmp_path):
    from forgekernel.config import ConfigError, load_settings

    assert load_settings({"effort": "medium"}, cwd=tmp_path).effort == "medium"
    with pytest.raises(ConfigError, match="effort 'extreme' .* not one of low, medium, high"):
        load_settings({"effort": "extreme"}, cwd=tmp_path)
