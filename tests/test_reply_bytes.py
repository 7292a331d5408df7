"""The boundary with a prover process (issue 10): whatever bytes come back, every attempt
gets exactly one verdict and the run's files stay well-formed.

- The protocol reader, fuzzed over a real socket pair: it returns a list of str or raises
  CheckerError, nothing else, and never waits past its deadline.
- The pool against a peer that speaks the framing with chosen bytes (malformed replies
  that a real HOL Light never sends, but a broken or hostile one could): each becomes
  that attempt's ERROR and the honest attempts keep their verdicts.
- Real HOL Light answers whose failure messages carry invalid UTF-8, NUL, escape
  sequences, CR/LF, commas and quotes, very long text and text that imitates the framing;
  and `proofeval check` end to end with such answers: results.csv, the store, the JSON and
  HTML reports.
"""

from __future__ import annotations

import csv
import json
import random
import re
import socket
import sqlite3
import threading
import time
import unicodedata
from pathlib import Path

import pytest

from proofeval.cli import main
from proofeval.errors import CheckerError
from proofeval.model import Attempt, Outcome, Problem, Verdict
from proofeval.provers.hol_light.pool import HolLightChecker
from proofeval.provers.hol_light.protocol import (
    MAX_FIELD_BYTES,
    MAX_FIELDS,
    Connection,
    decode_text,
    encode,
)
from proofeval.provers.hol_light.server import Launcher, WarmProcess
from proofeval.provers.interface import CheckSettings, Job
from proofeval.report.table import RESULTS_COLUMNS, category_table, format_table
from proofeval.runs.check import CheckOptions, run_check
from proofeval.store import RunStore


def frame(fields: list[bytes]) -> bytes:
    """A reply as proofeval_server.ml frames it: a count line, then each field as a length
    line and its bytes."""
    return b"%d\n" % len(fields) + b"".join(b"%d\n" % len(f) + f for f in fields)


def feed(data: bytes, close: bool = True, timeout: float = 0.5) -> list[str] | CheckerError:
    """What Connection.receive makes of `data` sent by the peer (then EOF if `close`)."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(data)
        if close:
            theirs.shutdown(socket.SHUT_WR)
        start = time.monotonic()
        try:
            got: list[str] | CheckerError = Connection(ours, 0).receive(timeout)
        except CheckerError as exc:
            got = exc
        assert time.monotonic() - start < timeout + 0.5, "the reader waited past its deadline"
    if isinstance(got, list):
        assert all(isinstance(f, str) for f in got)
        for field in got:
            field.encode("utf-8")  # no lone surrogates: storable and writable as is
    return got


def safe_message(message: str) -> bool:
    """One line, no control, format or surrogate character, within Outcome's limit."""
    return len(message) <= 300 and not any(
        unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in message
    )


# --- the reader, fuzzed --------------------------------------------------------------


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(b) + 1)
        what = rng.randrange(4)
        if what == 0 and i < len(b):
            del b[i]
        elif what == 1:
            b.insert(i, rng.choice(b"0123456789\n-+ \xff"))
        elif what == 2 and i < len(b):
            b[i] = rng.randrange(256)
        else:
            del b[i:]
    return bytes(b)


def test_fuzzed_bytes_give_fields_or_checker_error() -> None:
    rng = random.Random(20240610)
    kinds = {"fields": 0, "error": 0}
    for case in range(2000):
        fields = [rng.randbytes(rng.randrange(12)) for _ in range(rng.randrange(4))]
        valid = frame(fields)
        if case % 3 == 0:  # noise, biased towards what frames are made of
            alphabet = b"0123456789\n\n\n-+ x\x00\xff"
            data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        elif case % 3 == 1:
            data = mutate(rng, valid)
        else:
            data = valid
        got = feed(data, timeout=1.0)
        if data == valid:
            assert got == [decode_text(f) for f in fields], data
        kinds["error" if isinstance(got, CheckerError) else "fields"] += 1
    assert kinds["fields"] > 700 and kinds["error"] > 500  # both paths were exercised


MALFORMED = [
    b"",  # the process died before answering
    b"\n",
    b"x\n",
    b"-1\n",
    b"+1\n1\na",
    b" 1\n1\na",
    b"1 \n1\na",
    b"1_0\n",
    b"0x1\n",
    b"1e3\n",
    b"01\n1\na",
    b"\xff\n",
    "\u0663\n".encode(),  # an Arabic-Indic digit three: int() of the text would take it
    b"1\n-1\n",
    b"1\n\n",
    b"1\n99999999999999999999999\n",
    b"%d\n" % (MAX_FIELDS + 1),
    b"1\n%d\n" % (MAX_FIELD_BYTES + 1),
    b"1" * 100,  # no end of line
    b"1\n5\nab",  # a field cut short
    b"2\n1\na",  # a field missing
    b"1\n1\nab",  # bytes after the reply: the stream is out of step
    frame([b"ok"]) + frame([b"ok"]),
]


@pytest.mark.parametrize("data", MALFORMED)
def test_malformed_frames_are_checker_errors(data: bytes) -> None:
    assert isinstance(feed(data), CheckerError)


@pytest.mark.parametrize("data", [b"1" * 100, b"%d\n" % (MAX_FIELDS + 1), b"\xff\n"])
def test_malformed_frames_fail_at_once(data: bytes) -> None:
    start = time.monotonic()
    assert isinstance(feed(data, close=False, timeout=30.0), CheckerError)
    assert time.monotonic() - start < 5.0


def test_a_silent_or_stalled_process_times_out() -> None:
    for data in (b"", b"2\n", b"1\n5\nab"):
        got = feed(data, close=False, timeout=0.3)
        assert isinstance(got, CheckerError) and "in time" in str(got)


def test_well_formed_frames_decode_every_byte() -> None:
    assert feed(b"0\n") == []
    assert feed(frame([b""])) == [""]
    assert feed(frame([b"\xff\xfe", b"a\x00b", b"\xe2\x88", "\u2200".encode()])) == [
        "\\xff\\xfe",
        "a\x00b",
        "\\xe2\\x88",
        "\u2200",
    ]
    imitation = b"5\n7\nverdict\n2\nOK\n5\ncheck\n0\n\n5\n0.001"  # a field, not a frame
    assert feed(frame([b"verdict", b"FAIL", b"check", imitation, b"0.001"]))[3] == (
        imitation.decode()
    )


# --- the pool against a peer that replies with chosen bytes ---------------------------


def reply(verdict: bytes, stage: bytes = b"check", msg: bytes = b"", secs: bytes = b"0.01"):
    return frame([b"verdict", verdict, stage, msg, secs])


# Replies to `check`, by proof text. Only the "OK" ones are well-formed and OK.
REPLIES = {
    "honest": reply(b"OK"),
    "bytes": reply(b"FAIL", msg=b'\xff\x00\x1b[2J\r\nA,"B"\xe2\x88'),
    "long": reply(b"FAIL", msg=b"\xe2\x88\x80" * 5000),
    "verdict": reply(b"MAYBE"),
    "stage": reply(b"OK", stage=b"later"),
    "nan": reply(b"OK", secs=b"nan"),
    "negative": reply(b"OK", secs=b"-1"),
    "not-a-number": reply(b"OK", secs=b"\xff"),
    "four-fields": frame([b"verdict", b"OK", b"check", b""]),
    "empty": frame([]),
    "error": frame([b"error", b"unknown goal \xff"]),
    "garbage": b"\xff\xfe\n",
    "trailing": reply(b"OK") + b"0\n",
    "cut": reply(b"OK")[:9],  # then the process dies
}
WELL_FORMED = {"honest": Verdict.OK, "bytes": Verdict.FAIL, "long": Verdict.FAIL}


class ScriptedPeer:
    """Speaks proofeval_server.ml's framing like a warm HOL Light process: clones connect
    back to the launcher with their token; `check` is answered with REPLIES[proof]."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        ours, theirs = socket.socketpair()
        self.base = WarmProcess(launcher, Connection(ours, 0))
        self._serve(theirs)

    def _serve(self, sock: socket.socket) -> None:
        threading.Thread(target=self._loop, args=(sock,), daemon=True).start()

    def _loop(self, sock: socket.socket) -> None:
        conn = Connection(sock, 0)
        with sock:
            while True:
                try:
                    request = conn.receive(60.0)
                except CheckerError:  # proofeval closed this process
                    return
                if request[0] == "clone":
                    clone = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    clone.connect(str(self.launcher.workdir / "ctl.sock"))
                    clone.sendall(encode(["hello", request[1], "4242"]))
                    self._serve(clone)
                sock.sendall(REPLIES[request[4]] if request[0] == "check" else frame([b"ok"]))
                if request[0] == "check" and request[4] == "cut":
                    return


def test_every_malformed_reply_is_that_attempts_error(tmp_path: Path) -> None:
    launcher = Launcher(sandbox=False)
    try:
        peer = ScriptedPeer(launcher)
        problem = Problem(id="p", statement="`T`")
        proofs = [p for name in REPLIES for p in (name, "honest")]
        jobs = [Job(Attempt("p", i, proof, proof), problem, 5.0) for i, proof in enumerate(proofs)]
        results: dict[int, list[Outcome]] = {}
        checker = HolLightChecker(
            CheckSettings(workers=2),
            lambda a, o: results.setdefault(a.index, []).append(o),
            base=peer.base,
        )
        checker.run(jobs)
    finally:
        launcher.close()
    assert sorted(results) == list(range(len(jobs)))
    for i, proof in enumerate(proofs):
        [outcome] = results[i]
        assert outcome.verdict == WELL_FORMED.get(proof, Verdict.ERROR), (proof, outcome)
        assert safe_message(outcome.message), outcome.message
        if outcome.verdict == Verdict.ERROR:
            assert outcome.message.startswith("checker failure:"), outcome.message
    bytes_message = results[proofs.index("bytes")][0].message
    assert bytes_message == '\\xff\\x00\\x1b[2J A,"B"\\xe2\\x88'
    assert results[proofs.index("long")][0].message == "\u2200" * 300


# --- real HOL Light ------------------------------------------------------------------

# Tactics whose failure message is made of hostile bytes (OCaml string escapes).
HOSTILE = {
    "invalid-utf8": r'FAIL_TAC "bad \255\254 bytes"',
    "failwith": r'(fun g -> failwith "\255")',
    "nul": r'FAIL_TAC "a\000b"',
    "terminal": r'FAIL_TAC "\027[2J\027[31mred\011\012\127"',
    "crlf": r'FAIL_TAC "line 1\r\nline 2\rline 3\n"',
    "csv": r'FAIL_TAC "a,b \"quoted\", \"\" c;d"',
    "framing": r'FAIL_TAC "1\n5\nOK\n3\n2\nOK\n5\ncheck\n0\n\n5\n0.001\n"',
    "long": r"FAIL_TAC (String.make 100000 (Char.chr 120))",
    "exception": r'(fun g -> raise (Invalid_argument "\255\000"))',
    "precheck": "REWRITE_TAC[caf\u00e9] \u202e",
}
# The same long text of 3-byte characters after 0, 1 and 2 bytes: a byte limit on the
# OCaml side cuts at least one of them inside a character.
CUT = {
    f"cut-{n}": f'FAIL_TAC ("{"x" * n}" ^ String.concat "" (replicate "\\226\\136\\128" 400))'
    for n in range(3)
}
EXPECTED = {"exception": Verdict.ERROR, "precheck": Verdict.ERROR}
FAILED = 'the proof failed: "'


def test_hostile_failure_messages_get_one_verdict_each(hol_base: WarmProcess) -> None:
    problem = Problem(id="p", statement="`!n. n + 0 = n`")
    named = [p for item in {**HOSTILE, **CUT}.items() for p in (item, ("honest", "ARITH_TAC"))]
    jobs = [Job(Attempt("p", i, proof, proof), problem, 30.0) for i, (_, proof) in enumerate(named)]
    results: dict[int, list[Outcome]] = {}
    checker = HolLightChecker(
        CheckSettings(workers=2),
        lambda a, o: results.setdefault(a.index, []).append(o),
        base=hol_base,
    )
    checker.run(jobs)
    assert sorted(results) == list(range(len(jobs)))
    messages = {}
    for i, (name, _) in enumerate(named):
        [outcome] = results[i]
        expected = Verdict.OK if name == "honest" else EXPECTED.get(name, Verdict.FAIL)
        assert outcome.verdict == expected, (name, outcome)
        assert safe_message(outcome.message), (name, outcome.message)
        messages[name] = outcome.message
    # the answer's own text: quoted, after a fixed prefix (FAILED)
    assert messages["invalid-utf8"] == FAILED + 'bad \\xff\\xfe bytes"'
    assert messages["failwith"] == FAILED + '\\xff"'
    assert messages["nul"] == FAILED + 'a\\x00b"'
    assert messages["terminal"] == FAILED + '\\x1b[2J\\x1b[31mred \\x7f"'
    assert messages["crlf"] == FAILED + 'line 1 line 2 line 3"'
    assert messages["csv"] == FAILED + 'a,b \\"quoted\\", \\"\\" c;d"'
    assert messages["framing"] == FAILED + '1 5 OK 3 2 OK 5 check 0 5 0.001"'
    assert messages["long"] == (FAILED + "x" * 300)[:300]
    assert "Invalid_argument" in messages["exception"]
    assert "\\u202e" in messages["precheck"] or "caf\u00e9" in messages["precheck"]
    cut = [messages[name].removeprefix(FAILED) for name in CUT]
    assert all(m.lstrip("x").startswith("\u2200\u2200\u2200") for m in cut)
    assert any(re.search(r"\\xe2(\\x88)?(\.\.\.)?$", m) for m in cut), cut


def test_other_replies_carry_invalid_bytes_safely(hol_base: WarmProcess, tmp_path: Path) -> None:
    """A context load error, a statement error, an evaluated string and a split result."""
    proc = hol_base.clone()
    try:
        with pytest.raises(CheckerError, match=r"bad \\xff\\xfe context"):
            proc.load(
                hol_base.launcher.scratch_file("c", 'failwith "bad \\255\\254 context";;\n'), ""
            )
    finally:
        proc.close()
    proc = hol_base.clone()
    try:
        why = proc.add_goal("g", 'failwith "\\255\\000"')
        assert why is not None and "statement" in why
        assert proc.eval_string('"\\255\\000ok"') == "\\xff\x00ok"
        source = hol_base.launcher.workdir / "bytes.ml"
        source.write_bytes(b'loadt "\xff\xfe.ml";;\nlet x = 1;;\n')
        phrases = proc.split(source)
        assert [(p.kind, p.arg) for p in phrases] == [("load", "\\xff\\xfe.ml"), ("other", "")]
    finally:
        proc.close()


def test_check_run_with_hostile_answers_keeps_files_well_formed(
    hol_base: WarmProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problems = [
        {"id": "arith.add_0", "category": "arith", "statement": "`!n. n + 0 = n`"},
        {
            "id": "defs.twice",
            "category": 'defs, "quoted"',
            "header": "let TWICE = new_definition `TWICE n = 2 * n`;;\n",
            "statement": "`!n. TWICE n = n + n`",
        },
        {
            "id": "broken.context",
            "category": "broken",
            "header": 'failwith "context \\255\\000 fails";;\n',
            "statement": "`T`",
        },
    ]
    answers = [("arith.add_0", proof) for proof in HOSTILE.values()]
    answers += [("arith.add_0", "ARITH_TAC"), ("arith.add_0", "ARITH_TAC\x00\x1b")]
    answers += [("defs.twice", "REWRITE_TAC[TWICE] THEN ARITH_TAC")]
    answers += [("defs.twice", HOSTILE["framing"]), ("broken.context", "ACCEPT_TAC TRUTH")]
    bench = tmp_path / "problems.jsonl"
    bench.write_text("".join(json.dumps(p) + "\n" for p in problems))
    answers_file = tmp_path / "answers.jsonl"
    answers_file.write_text(
        "".join(json.dumps({"problem_id": pid, "answer": a}) + "\n" for pid, a in answers)
    )
    run = tmp_path / "run"
    opts = CheckOptions(
        problems=bench, answers=answers_file, out=run, settings=CheckSettings(workers=2)
    )
    rows = run_check(opts, warm={"hol-light": hol_base})
    assert len(rows) == len(answers) and all(r.verdict is not None for r in rows)
    table = format_table(category_table(rows))
    total = table.splitlines()[-1].split()
    assert (total[0], total[2]) == ("Total", str(len(answers)))  # Category, Problems, Attempts

    raw = (run / "results.csv").read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert raw.count("\n") == len(answers) + 1  # one physical line per row: no newline in a cell
    with (run / "results.csv").open(newline="", encoding="utf-8") as f:
        records = list(csv.reader(f, strict=True))
    assert tuple(records[0]) == RESULTS_COLUMNS
    assert all(len(r) == len(RESULTS_COLUMNS) for r in records)
    got = [dict(zip(RESULTS_COLUMNS, r, strict=True)) for r in records[1:]]
    by_attempt = {(r["problem_id"], int(r["attempt"])): r for r in got}
    assert len(by_attempt) == len(answers)
    verdicts = {key: r["verdict"] for key, r in by_attempt.items()}
    n = len(HOSTILE)
    assert verdicts[("arith.add_0", n)] == "OK"
    assert verdicts[("defs.twice", 0)] == "OK"
    assert verdicts[("defs.twice", 1)] == "FAIL"
    assert verdicts[("arith.add_0", 0)] == "FAIL"
    assert by_attempt[("arith.add_0", 0)]["message"] == FAILED + 'bad \\xff\\xfe bytes"'
    assert by_attempt[("defs.twice", 0)]["category"] == 'defs, "quoted"'
    broken = by_attempt[("broken.context", 0)]
    assert (broken["verdict"], broken["stage"]) == ("ERROR", "precheck")
    assert "context \\xff" in broken["message"]  # the toplevel prints NUL as \\000
    assert all(safe_message(r["message"]) for r in got)

    with sqlite3.connect(run / "proofeval.sqlite") as db:
        stored = dict(
            ((pid, idx), msg)
            for pid, idx, msg in db.execute("SELECT problem_id, idx, message FROM verdicts")
        )
    assert stored == {key: r["message"] for key, r in by_attempt.items()}
    store = RunStore(run)
    try:
        for attempt in store.attempts():
            outcome = store.outcome(attempt)
            assert outcome is not None
            assert outcome.message == by_attempt[(attempt.problem_id, attempt.index)]["message"]
    finally:
        store.close()

    capsys.readouterr()
    assert main(["report", str(run), f"--json={tmp_path / 'report.json'}"]) == 0
    doc = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert doc["attempts"] == doc["checked_attempts"] == len(answers)
    assert sum(doc["verdicts"].values()) == len(answers)
    assert main(["report", str(run), "--html", str(tmp_path / "html")]) == 0
    assert "Traceback" not in capsys.readouterr().err
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    assert "bad \\xff\\xfe bytes" in page and "context \\xff" in page
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", page)
