"""The run store: problems, attempts and verdicts of one run in RUN_DIR/proofeval.sqlite.

Each verdict is committed as it is recorded, in WAL mode, so a run killed at any moment
(even by SIGKILL) keeps every verdict it finished and resumes from there. A verdict belongs
to the exact proof text it judged (its SHA-256): change an attempt's proof and it is pending
again.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import InputError
from proofeval.model import Attempt, Generation, Outcome, Problem, Stage, Verdict

FILE_NAME = "proofeval.sqlite"
SCHEMA_VERSION = 2
# A run's arms (runs/arms.py): the default one is RUN_DIR, arm NAME is RUN_DIR/arms/NAME,
# each with a store of its own (no table changes: an older run is one default arm).
DEFAULT_ARM = "default"
ARMS = "arms"
ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS problems (
        id TEXT PRIMARY KEY, benchmark TEXT NOT NULL, prover TEXT NOT NULL,
        category TEXT NOT NULL, statement TEXT NOT NULL, header_sha TEXT NOT NULL,
        directory TEXT NOT NULL, timeout REAL, reference TEXT)""",
    """CREATE TABLE IF NOT EXISTS attempts (
        problem_id TEXT NOT NULL, idx INTEGER NOT NULL, output TEXT NOT NULL,
        proof TEXT NOT NULL, proof_sha TEXT NOT NULL, PRIMARY KEY (problem_id, idx))""",
    """CREATE TABLE IF NOT EXISTS verdicts (
        problem_id TEXT NOT NULL, idx INTEGER NOT NULL, proof_sha TEXT NOT NULL,
        verdict TEXT NOT NULL, stage TEXT NOT NULL, seconds REAL NOT NULL,
        message TEXT NOT NULL, PRIMARY KEY (problem_id, idx, proof_sha))""",
    """CREATE TABLE IF NOT EXISTS generations (
        problem_id TEXT NOT NULL, sample INTEGER NOT NULL, prompt TEXT NOT NULL,
        output TEXT NOT NULL, model TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL, seconds REAL NOT NULL,
        PRIMARY KEY (problem_id, sample))""",
    # A FAIL's structured feedback (proofeval.states.feedback), as JSON, for the proof text
    # it is about; added in version 2 without a migration: older stores gain the table.
    """CREATE TABLE IF NOT EXISTS feedback (
        problem_id TEXT NOT NULL, idx INTEGER NOT NULL, proof_sha TEXT NOT NULL,
        feedback TEXT NOT NULL, PRIMARY KEY (problem_id, idx, proof_sha))""",
    # The repair rounds (>= 1) of `run --rounds`: round 0 is the ordinary attempt of the
    # sample (the tables above). The verdict columns are NULL until the round is checked.
    """CREATE TABLE IF NOT EXISTS repair_rounds (
        problem_id TEXT NOT NULL, sample INTEGER NOT NULL, round INTEGER NOT NULL,
        prompt TEXT NOT NULL, output TEXT NOT NULL, proof TEXT NOT NULL, model TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
        gen_seconds REAL NOT NULL, verdict TEXT, stage TEXT, check_seconds REAL, message TEXT,
        feedback TEXT, PRIMARY KEY (problem_id, sample, round))""",
    # The transcript of `run --agent`: each model turn and each tool call with its result.
    """CREATE TABLE IF NOT EXISTS agent_steps (
        problem_id TEXT NOT NULL, sample INTEGER NOT NULL, step INTEGER NOT NULL,
        kind TEXT NOT NULL, body TEXT NOT NULL, seconds REAL NOT NULL,
        PRIMARY KEY (problem_id, sample, step))""",
    # What produced the run (runs/manifest.py): JSON values by name.
    "CREATE TABLE IF NOT EXISTS run_info (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

RECORD_GENERATION = "INSERT OR REPLACE INTO generations VALUES (?, ?, ?, ?, ?, ?, ?, ?)"

GENERATIONS = """
SELECT problem_id, sample, prompt, output, model, prompt_tokens, completion_tokens, seconds
FROM generations ORDER BY problem_id, sample
"""

PROBLEMS = """
SELECT id, statement, prover, benchmark, category, '', directory, timeout, reference
FROM problems ORDER BY id
"""

ATTEMPTS = "SELECT problem_id, idx, output, proof FROM attempts ORDER BY problem_id, idx"

UPSERT_PROBLEM = """
INSERT INTO problems VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
    benchmark = excluded.benchmark, prover = excluded.prover, category = excluded.category,
    statement = excluded.statement, header_sha = excluded.header_sha,
    directory = excluded.directory,
    timeout = excluded.timeout, reference = excluded.reference
"""

UPSERT_ATTEMPT = """
INSERT INTO attempts VALUES (?, ?, ?, ?, ?)
ON CONFLICT (problem_id, idx) DO UPDATE SET
    output = excluded.output, proof = excluded.proof, proof_sha = excluded.proof_sha
"""

DROP_STALE_VERDICT = "DELETE FROM verdicts WHERE problem_id = ? AND idx = ? AND proof_sha != ?"

RECORD = "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?)"

OUTCOME = """
SELECT verdict, stage, seconds, message FROM verdicts
WHERE problem_id = ? AND idx = ? AND proof_sha = ?
"""

ALL_FEEDBACK = """
SELECT f.problem_id, f.idx, f.feedback FROM feedback f
JOIN attempts a ON a.problem_id = f.problem_id AND a.idx = f.idx AND a.proof_sha = f.proof_sha
ORDER BY f.problem_id, f.idx
"""

RESULTS = """
SELECT a.problem_id, a.idx, COALESCE(p.category, 'uncategorized'),
       v.verdict, v.stage, v.seconds, COALESCE(v.message, '')
FROM attempts a
LEFT JOIN problems p ON p.id = a.problem_id
LEFT JOIN verdicts v
    ON v.problem_id = a.problem_id AND v.idx = a.idx AND v.proof_sha = a.proof_sha
ORDER BY a.problem_id, a.idx
"""


@dataclass(frozen=True)
class ResultRow:
    problem_id: str
    attempt: int
    category: str
    verdict: Verdict | None
    stage: Stage | None
    seconds: float | None
    message: str
    round: int = 0  # the repair round whose verdict this is (0: the first answer)


@dataclass(frozen=True)
class Round:
    """One repair round of one sample: its completion, proof, and verdict (None: not
    checked yet) with the feedback kept for the next round."""

    problem_id: str
    sample: int
    round: int
    generation: Generation
    proof: str
    outcome: Outcome | None = None
    feedback: dict | None = None


ROUND_COLUMNS = (
    "problem_id, sample, round, prompt, output, proof, model, prompt_tokens, "
    "completion_tokens, gen_seconds, verdict, stage, check_seconds, message, feedback"
)


def proof_sha(attempt: Attempt) -> str:
    return hashlib.sha256(attempt.proof.encode()).hexdigest()


class RunStore:
    """One run directory's SQLite store; its methods may be called from several threads."""

    def __init__(self, run_dir: Path) -> None:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"{run_dir}: cannot create the run directory: {exc.strerror}"
            ) from None
        self.path = run_dir / FILE_NAME
        self._lock = threading.Lock()
        # isolation_level=None: no implicit transactions; _transaction() commits explicitly.
        self._db = sqlite3.connect(
            self.path, timeout=30, isolation_level=None, check_same_thread=False
        )
        try:
            self._setup()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InputError(f"{self.path}: not a proofeval run store ({exc})") from None
        except InputError:
            self._db.close()
            raise

    def _setup(self) -> None:
        self._db.execute("PRAGMA journal_mode=WAL")
        # With WAL, NORMAL loses no commit when the process dies; only a power cut can.
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._transaction() as db:
            for statement in SCHEMA:
                db.execute(statement)
            row = db.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                raise InputError(
                    f"{self.path}: run store version {row[0]}; "
                    f"this proofeval reads version {SCHEMA_VERSION}"
                )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def add_problems(self, problems: Iterable[Problem]) -> None:
        """Insert or update problems by id."""
        rows = [
            (
                p.id,
                p.benchmark,
                p.prover,
                p.category,
                p.statement,
                hashlib.sha256(p.header.encode()).hexdigest(),
                p.directory,
                p.timeout,
                p.reference,
            )
            for p in problems
        ]
        with self._transaction() as db:
            db.executemany(UPSERT_PROBLEM, rows)

    def add_attempts(self, attempts: Iterable[Attempt]) -> None:
        """Insert or update attempts by (problem id, index); a changed proof loses its verdict."""
        rows = [(a.problem_id, a.index, a.output, a.proof, proof_sha(a)) for a in attempts]
        with self._transaction() as db:
            db.executemany(UPSERT_ATTEMPT, rows)
            db.executemany(DROP_STALE_VERDICT, [(pid, idx, sha) for pid, idx, _, _, sha in rows])

    def record(self, attempt: Attempt, outcome: Outcome) -> None:
        """Store the verdict on this attempt's proof text, committed before returning."""
        row = (
            attempt.problem_id,
            attempt.index,
            proof_sha(attempt),
            outcome.verdict.value,
            outcome.stage.value,
            outcome.seconds,
            outcome.message,
        )
        with self._transaction() as db:
            db.execute(RECORD, row)

    def record_feedback(self, attempt: Attempt, feedback: dict) -> None:
        """Keep a FAIL's feedback (a JSON object) with this attempt's proof text."""
        row = (attempt.problem_id, attempt.index, proof_sha(attempt), json.dumps(feedback))
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO feedback VALUES (?, ?, ?, ?)", row)

    def feedback(self, attempt: Attempt) -> dict | None:
        """The feedback kept with this attempt's proof text, if any."""
        key = (attempt.problem_id, attempt.index, proof_sha(attempt))
        with self._lock:
            row = self._db.execute(
                "SELECT feedback FROM feedback WHERE problem_id = ? AND idx = ? AND proof_sha = ?",
                key,
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def all_feedback(self) -> list[tuple[str, int, dict]]:
        """(problem id, attempt index, feedback) of every attempt whose current proof text
        has feedback, by problem and index."""
        with self._lock:
            rows = self._db.execute(ALL_FEEDBACK).fetchall()
        return [(problem_id, index, json.loads(kept)) for problem_id, index, kept in rows]

    def outcome(self, attempt: Attempt) -> Outcome | None:
        """The verdict on this attempt's exact proof text, or None if it was not checked."""
        with self._lock:
            key = (attempt.problem_id, attempt.index, proof_sha(attempt))
            row = self._db.execute(OUTCOME, key).fetchone()
        if row is None:
            return None
        return Outcome(Verdict(row[0]), Stage(row[1]), row[2], row[3])

    def pending(self, attempts: Iterable[Attempt]) -> list[Attempt]:
        """The attempts with no verdict on their exact proof text, in the order given."""
        with self._lock:
            done = set(self._db.execute("SELECT problem_id, idx, proof_sha FROM verdicts"))
        return [a for a in attempts if (a.problem_id, a.index, proof_sha(a)) not in done]

    def results(self) -> list[ResultRow]:
        """Every attempt with its category and verdict (None if pending), by problem, index."""
        with self._lock:
            rows = self._db.execute(RESULTS).fetchall()
        return [_result_row(row) for row in rows]

    def record_generation(self, gen: Generation) -> None:
        """Store one completion, committed before returning (a re-run skips it)."""
        row = (
            gen.problem_id,
            gen.sample,
            gen.prompt,
            gen.output,
            gen.model,
            gen.prompt_tokens,
            gen.completion_tokens,
            gen.seconds,
        )
        with self._transaction() as db:
            db.execute(RECORD_GENERATION, row)

    def generations(self) -> list[Generation]:
        """Every recorded completion, by problem and sample."""
        with self._lock:
            rows = self._db.execute(GENERATIONS).fetchall()
        return [Generation(*row) for row in rows]

    def problems(self) -> list[Problem]:
        """Every problem of the run, by id, without its header (context): the store keeps
        only the header's hash, since contexts can be large (the inlined prefix of a source
        file for each of hundreds of problems); the benchmark has them."""
        with self._lock:
            rows = self._db.execute(PROBLEMS).fetchall()
        return [Problem(*row) for row in rows]

    def attempts(self) -> list[Attempt]:
        """Every attempt of the run (checked or not), by problem and index."""
        with self._lock:
            rows = self._db.execute(ATTEMPTS).fetchall()
        return [Attempt(*row) for row in rows]

    def record_round(self, r: Round) -> None:
        """Store a repair round's completion and proof (unchecked), committed at once."""
        g = r.generation
        row = (r.problem_id, r.sample, r.round, g.prompt, g.output, r.proof, g.model,
               g.prompt_tokens, g.completion_tokens, g.seconds)  # fmt: skip
        with self._transaction() as db:
            db.execute(
                f"INSERT OR REPLACE INTO repair_rounds ({ROUND_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL)",
                row,
            )

    def record_round_outcome(self, r: Round, outcome: Outcome) -> None:
        o = outcome
        row = (
            o.verdict.value,
            o.stage.value,
            o.seconds,
            o.message,
            r.problem_id,
            r.sample,
            r.round,
        )
        with self._transaction() as db:
            db.execute(
                "UPDATE repair_rounds SET verdict = ?, stage = ?, check_seconds = ?, "
                "message = ? WHERE problem_id = ? AND sample = ? AND round = ?",
                row,
            )

    def record_round_feedback(self, r: Round, feedback: dict) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE repair_rounds SET feedback = ? "
                "WHERE problem_id = ? AND sample = ? AND round = ?",
                (json.dumps(feedback), r.problem_id, r.sample, r.round),
            )

    def rounds(self) -> list[Round]:
        """Every repair round, by problem, sample and round."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {ROUND_COLUMNS} FROM repair_rounds ORDER BY problem_id, sample, round"
            ).fetchall()
        return [_round(row) for row in rows]

    def record_agent_step(self, problem_id: str, sample: int, kind: str, body: dict,
                          seconds: float) -> None:  # fmt: skip
        """Append one step (a model turn, a tool call) to a sample's agent transcript."""
        with self._transaction() as db:
            (step,) = db.execute(
                "SELECT count(*) FROM agent_steps WHERE problem_id = ? AND sample = ?",
                (problem_id, sample),
            ).fetchone()
            db.execute(
                "INSERT INTO agent_steps VALUES (?, ?, ?, ?, ?, ?)",
                (problem_id, sample, step, kind, json.dumps(body), seconds),
            )

    def forget_agent_steps(self, problem_id: str, sample: int) -> None:
        """Drop a sample's transcript (a conversation cut short, about to start again)."""
        with self._transaction() as db:
            db.execute(
                "DELETE FROM agent_steps WHERE problem_id = ? AND sample = ?", (problem_id, sample)
            )

    def agent_steps(self) -> list[tuple[str, int, int, str, dict, float]]:
        """Every agent step: (problem id, sample, step, kind, body, seconds), in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM agent_steps ORDER BY problem_id, sample, step"
            ).fetchall()
        return [
            (pid, s, step, kind, json.loads(body), sec) for pid, s, step, kind, body, sec in rows
        ]

    def set_info(self, key: str, value: object) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO run_info VALUES (?, ?)", (key, json.dumps(value)))

    def info(self) -> dict[str, object]:
        """What produced the run, by name (see runs/manifest.py); empty for a run that
        recorded none (made by `check` from answers, or by an older proofeval)."""
        with self._lock:
            rows = self._db.execute("SELECT key, value FROM run_info ORDER BY key").fetchall()
        return {key: json.loads(value) for key, value in rows}

    def close(self) -> None:
        with self._lock:
            self._db.close()


def named_arms(run_dir: Path) -> list[tuple[str, Path]]:
    """The named arms of the run in `run_dir` that have a store, by name."""
    root = run_dir / ARMS
    if not root.is_dir():
        return []
    return [
        (path.name, path)
        for path in sorted(root.iterdir())
        if ARM_NAME.fullmatch(path.name) and (path / FILE_NAME).is_file()
    ]


def _round(row: tuple) -> Round:
    pid, sample, number, prompt, output, proof, model, pt, ct, gs = row[:10]
    verdict, stage, seconds, message, feedback = row[10:]
    outcome = None
    if verdict is not None:
        outcome = Outcome(Verdict(verdict), Stage(stage), seconds, message)
    gen = Generation(pid, sample, prompt, output, model, pt, ct, gs)
    return Round(
        pid, sample, number, gen, proof, outcome, json.loads(feedback) if feedback else None
    )


def _result_row(row: tuple) -> ResultRow:
    problem_id, index, category, verdict, stage, seconds, message = row
    return ResultRow(
        problem_id,
        index,
        category,
        None if verdict is None else Verdict(verdict),
        None if stage is None else Stage(stage),
        seconds,
        message,
    )
