"""Config layering and the safe expression evaluator."""

from __future__ import annotations

import pytest

from forgekernel import exprs
from forgekernel.config import ConfigError, load_settings, read_env_file


def test_layers_flag_beats_local_env(tmp_path):
    (tmp_path / "local.env").write_text("# comment\nFK_AGENT=openai\nexport FK_MODEL='gpt-x'\nFK_GPU=1\n")
    s = load_settings({"agent": "builtin", "model": None}, cwd=tmp_path)
    assert s.agent == "builtin" and s.sources["agent"] == "flag"
    assert s.model == "gpt-x" and s.gpu == 1


def test_bad_env_line(tmp_path):
    f = tmp_path / "local.env"
    f.write_text("NOEQUALS\n")
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        read_env_file(f)


def test_bad_gpu_and_delivery(tmp_path):
    with pytest.raises(ConfigError, match="GPU index"):
        load_settings({"gpu": "zero"}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="delivery"):
        load_settings({"delivery": "fax"}, cwd=tmp_path)


@pytest.mark.parametrize(("text", "env", "want"), [
    ("4 * M * N", {"M": 2, "N": 3}, 24),
    ("speedup >= 3", {"speedup": 3.5}, True),
    ("launches == 1 and spills == 0", {"launches": 1, "spills": 2}, False),
    ("1 < x <= 3", {"x": 3}, True),
    ("max(a, b) // 2", {"a": 7, "b": 3}, 3),
    ("2 ** log2(N)", {"N": 1024}, 1024.0),
])
def test_evaluate(text, env, want):
    assert exprs.evaluate(text, env) == want


@pytest.mark.parametrize("text", ["__import__('os')", "a.b", "x[0]", "lambda: 1", "'s'", "open('f')", "1 +"])
def test_refused(text):
    with pytest.raises(exprs.ExprError):
        exprs.evaluate(text, {"a": 1, "x": 1})


def test_missing_name_is_reported():
    with pytest.raises(exprs.MissingName) as info:
        exprs.evaluate("dram_pct >= 80", {})
    assert info.value.name == "dram_pct"
    assert exprs.names("a + max(b, 2)") == {"a", "b"}
