"""A grading run's store: the run store's SQLite file, with grading tables of its own.

Tables: the items graded (as JSON), every model call (prompt, raw output, tokens, seconds;
one row per item, run and stage, where run -1 holds the location-matching judge's calls),
the grading each run made of each item (JSON, parsed or failed) and the run's settings
(its method). Each row is committed as it arrives, like verdicts: a killed run resumes.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from proofeval.errors import InputError
from proofeval.grading.items import Item
from proofeval.grading.result import Grading
from proofeval.store import FILE_NAME, RunStore

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS grading_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS grading_items (
        id TEXT PRIMARY KEY, position INTEGER NOT NULL, item TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS grading_calls (
        item_id TEXT NOT NULL, run INTEGER NOT NULL, stage TEXT NOT NULL, prompt TEXT NOT NULL,
        prompt_sha TEXT NOT NULL, output TEXT NOT NULL, model TEXT NOT NULL,
        prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, seconds REAL NOT NULL,
        PRIMARY KEY (item_id, run, stage))""",
    """CREATE TABLE IF NOT EXISTS gradings (
        item_id TEXT NOT NULL, run INTEGER NOT NULL, parsed INTEGER NOT NULL,
        grading TEXT NOT NULL, PRIMARY KEY (item_id, run))""",
)


@dataclass(frozen=True)
class CallRecord:
    """One model call of a grading, as stored."""

    item_id: str
    run: int
    stage: str
    prompt: str
    output: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


class GradingStore(RunStore):
    """RUN_DIR's store with the grading tables; thread-safe like RunStore."""

    def _setup(self) -> None:
        super()._setup()
        with self._transaction() as db:
            for statement in SCHEMA:
                db.execute(statement)

    def claim_method(self, method: str) -> None:
        """Record the run's method; InputError if the directory was graded by another."""
        with self._transaction() as db:
            row = db.execute("SELECT value FROM grading_settings WHERE key = 'method'").fetchone()
            if row is None:
                db.execute("INSERT INTO grading_settings VALUES ('method', ?)", (method,))
            elif row[0] != method:
                raise InputError(
                    f"{self.path.parent}: graded with --method {row[0]}; "
                    "give another --out for another method"
                )

    def method(self) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM grading_settings WHERE key = 'method'"
            ).fetchone()
        return None if row is None else row[0]

    def add_items(self, items: list[Item]) -> None:
        rows = [(item.id, i, json.dumps(item.to_json())) for i, item in enumerate(items)]
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO grading_items VALUES (?, ?, ?)", rows)

    def items(self) -> list[Item]:
        with self._lock:
            rows = self._db.execute("SELECT item FROM grading_items ORDER BY position").fetchall()
        return [Item.from_json(json.loads(row[0])) for row in rows]

    def record_call(self, call: CallRecord) -> None:
        row = (
            call.item_id,
            call.run,
            call.stage,
            call.prompt,
            prompt_sha(call.prompt),
            call.output,
            call.model,
            call.prompt_tokens,
            call.completion_tokens,
            call.seconds,
        )
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO grading_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row
            )

    def answer(self, item_id: str, run: int, stage: str, prompt: str) -> str | None:
        """The stored output of this call if it was asked with exactly this prompt."""
        with self._lock:
            row = self._db.execute(
                "SELECT output FROM grading_calls WHERE item_id = ? AND run = ? AND stage = ? "
                "AND prompt_sha = ?",
                (item_id, run, stage, prompt_sha(prompt)),
            ).fetchone()
        return None if row is None else row[0]

    def calls(self, prompts: bool = True) -> list[CallRecord]:
        """Every call; without their prompts (as "") when `prompts` is False, since the
        prompts of a paper's calls each hold the whole paper."""
        prompt = "prompt" if prompts else "''"
        # CAST: stores written before replies were read strictly may hold counts as text
        with self._lock:
            rows = self._db.execute(
                f"SELECT item_id, run, stage, {prompt}, output, model, "
                "CAST(prompt_tokens AS INTEGER), CAST(completion_tokens AS INTEGER), "
                "CAST(seconds AS REAL) FROM grading_calls ORDER BY item_id, run, stage"
            ).fetchall()
        return [CallRecord(*row) for row in rows]

    def record_grading(self, grading: Grading) -> None:
        row = (grading.item_id, grading.run, int(grading.parsed), json.dumps(grading.to_json()))
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO gradings VALUES (?, ?, ?, ?)", row)

    def gradings(self) -> list[Grading]:
        with self._lock:
            rows = self._db.execute("SELECT grading FROM gradings ORDER BY item_id, run").fetchall()
        return [Grading.from_json(json.loads(row[0])) for row in rows]


def prompt_sha(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()


def is_grading_run(run_dir: Path) -> bool:
    """Whether RUN_DIR holds a grading run (a store whose grading method is set); read-only,
    so that asking leaves any other run's store as it was."""
    path = run_dir / FILE_NAME
    if not path.is_file():
        return False
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return (
            db.execute("SELECT 1 FROM grading_settings WHERE key = 'method'").fetchone() is not None
        )
    except sqlite3.Error:  # no such table: a proof-checking run, or not a store at all
        return False
    finally:
        db.close()
