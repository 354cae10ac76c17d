"""Property: whatever damage run.toml or ledger.jsonl takes, `forge status` and `forge run`
end with exit 0 or 2, never 3 or a traceback, and a failure is one `forge: error:` line; on
resume a damaged ledger line is refused, never dropped, unless it is a torn last line.

A seeded random loop (FK_FUZZ_SEED, FK_FUZZ_CASES to explore more) over truncations, byte
flips, junk lines, deleted and repeated lines, and values of the wrong type.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path

import pytest

from engine_support.fake_judge import judge_in_process
from engine_support.runs import agents, new_run, step, write_script
from forgekernel.cli import main
from forgekernel.delivery import make_runner
from forgekernel.run import engine

SEED = int(os.environ.get("FK_FUZZ_SEED", "20261203"))
CASES = int(os.environ.get("FK_FUZZ_CASES", "14"))
FAST_JUDGE = "engine_support.fake_judge:judge_in_process"
JUNK = [b"garbage", b"{}", b"[1, 2]", b'{"kind": "bogus"}', b"key = [", b"\x00\x00\x00",
        b'{"seq": "x"}', b"\xff\xfe", b"[[budget]]", b'iterations = "many"', b"   "]
WRONG = ['"many"', "-3", "true", "[1]", "{ a = 1 }", "0", "1e400", "nan", '""']
WRONG_JSON = ['"many"', "-3", "true", "[1]", "{}", "null", '""', "1e400"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, Path]:
    """A finished two-attempt run (session, plan, started, attempts, gate, confirm, end lines)."""
    tmp = tmp_path_factory.mktemp("base")
    root = new_run(tmp)
    script = write_script(tmp / "s.json", [step("torch_fast.py"), step("torch_slow.py")] * 3)
    coder, architect = agents(script)
    engine.run(root, coder, architect, judge_in_process, make_runner("cpu"), limits={"iterations": 2})
    toml = root / "run.toml"
    toml.write_text(toml.read_text().replace("iterations = 40", "iterations = 2"))  # a resume stops at once
    return root, script


def lines_of(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def corrupt(data: bytes, rng: random.Random, ledger: bool) -> bytes:
    kind = rng.choice(["truncate", "flip", "junk", "delete", "repeat", "wrong"])
    if kind == "truncate":
        return data[:rng.randrange(len(data))]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(len(out))] = rng.choice(b"\x00\xff{}[]\",:=\n 0a9Z-.")
        return bytes(out)
    lines = lines_of(data)
    at = rng.randrange(len(lines))
    if kind == "junk":
        lines.insert(at, rng.choice(JUNK))
    elif kind == "delete":
        del lines[at]
    elif kind == "repeat":
        lines.insert(at, lines[at])
    else:
        return wrong_type(data, rng, ledger)
    return b"\n".join(lines)


def wrong_type(data: bytes, rng: random.Random, ledger: bool) -> bytes:
    lines = lines_of(data)
    if ledger:
        n = rng.randrange(len(lines) - 1)
        obj = json.loads(lines[n])
        key = rng.choice(sorted(obj))
        obj[key] = json.loads(rng.choice(WRONG_JSON))
        lines[n] = json.dumps(obj).encode()
        return b"\n".join(lines)
    values = [i for i, ln in enumerate(lines) if re.match(rb"^\w+ = ", ln)]
    n = rng.choice(values)
    lines[n] = lines[n].split(b" = ")[0] + b" = " + rng.choice(WRONG).encode()
    return b"\n".join(lines)


def kept_part(data: bytes) -> bytes:
    """What resuming may keep of a damaged ledger: all but an unfinished (or NUL) last line."""
    head, _, tail = data.rpartition(b"\n")
    if tail or not head:
        return data[:len(data) - len(tail)]
    body, _, last = head.rpartition(b"\n")
    return data if last.strip(b"\0 \t\r") else data[:len(body) + 1 if body else 0]


def check_outcome(code: int, out: str, err: str, what: str) -> None:
    assert code in (0, 2), f"{what}: exit {code}\n{err}"
    assert "Traceback" not in out + err and "internal error" not in err, f"{what}\n{err}"
    if err.strip():
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("forge: error: "), f"{what}\n{err}"


@pytest.mark.parametrize("target", ["run.toml", "ledger.jsonl"])
def test_random_damage_is_one_line_or_a_normal_run(capsys, tmp_path, base, target):
    root, script = base
    rng = random.Random(f"{SEED}-{target}")
    errors = 0
    for case in range(CASES):
        run = tmp_path / f"case{case}"
        shutil.copytree(root, run, symlinks=True)
        path = run / target
        damaged = corrupt(path.read_bytes(), rng, target == "ledger.jsonl")
        path.write_bytes(damaged)
        what = f"case {case} ({target}, seed {SEED}): {damaged[-200:]!r}"
        code = main(["status", str(run)])
        out, err = capsys.readouterr()
        check_outcome(code, out, err, "status " + what)
        code = main(["run", str(run), "--script", str(script), "--delivery", "cpu", "--judge", FAST_JUDGE])
        out, err = capsys.readouterr()
        check_outcome(code, out, err, "run " + what)
        errors += bool(err.strip())
        if target == "ledger.jsonl" and not err.strip():  # resumed: nothing complete was dropped
            assert path.read_bytes().startswith(kept_part(damaged)), what
        shutil.rmtree(run)
    assert errors, "no corruption was refused: the generator is not damaging anything"


def test_a_damaged_ledger_line_is_refused_on_resume(capsys, tmp_path, base):
    root, script = base
    for n in (1, -2):  # a middle line, then the last complete one: never dropped silently
        run = tmp_path / f"run{n}"
        shutil.copytree(root, run, symlinks=True)
        lines = (run / "ledger.jsonl").read_bytes().split(b"\n")
        lines[n] = lines[n][:-1] + b", }"  # a trailing comma: not JSON
        (run / "ledger.jsonl").write_bytes(b"\n".join(lines))
        before = (run / "ledger.jsonl").read_bytes()
        code = main(["run", str(run), "--script", str(script), "--delivery", "cpu", "--judge", FAST_JUDGE])
        _, err = capsys.readouterr()
        number = n if n > 0 else len(lines) + n
        assert code == 2 and re.fullmatch(rf"forge: error: .*ledger.jsonl: line {number + 1} is "
                                          r"damaged \(.*\); only a torn last line is repaired.*\n", err), err
        assert (run / "ledger.jsonl").read_bytes() == before
