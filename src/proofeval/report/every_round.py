"""Every round of a repaired sample (`run --rounds R`) in the HTML report: round 0 (the
ordinary attempt) and each repair round, with its verdict, proof, output and, from round 1,
the repair prompt that asked for it. The page's headline and chips are each sample's final
round (report/run_data.py); this is how it got there.

Proofs, outputs, prompts and messages are a model's or a prover's text: shown only through
`escape`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from proofeval.store import FILE_NAME, RunStore


@dataclass(frozen=True)
class RoundShown:
    round: int
    verdict: str  # a Verdict's value, or "unchecked"
    stage: str
    seconds: float | None
    message: str
    proof: str
    output: str
    prompt: str | None  # the repair prompt (None for round 0: the attempt's own prompt)


Rounds = dict[tuple[str, int], list[RoundShown]]  # by (problem id, sample)


def load_every_round(run_dir: Path) -> Rounds:
    """Every round of each sample that has repair rounds ({} for a run without)."""
    if not (run_dir / FILE_NAME).is_file():
        return {}
    store = RunStore(run_dir)
    try:
        rounds = store.rounds()
        if not rounds:
            return {}
        attempts = {(a.problem_id, a.index): a for a in store.attempts()}
        results = {(r.problem_id, r.attempt): r for r in store.results()}
    finally:
        store.close()
    found: Rounds = {}
    for r in rounds:  # ordered by problem, sample, round
        key = (r.problem_id, r.sample)
        if key not in found:
            found[key] = [_round_zero(attempts.get(key), results.get(key))]
        o = r.outcome
        found[key].append(
            RoundShown(r.round, "unchecked" if o is None else o.verdict.value,
                       "" if o is None else o.stage.value, None if o is None else o.seconds,
                       "" if o is None else o.message, r.proof, r.generation.output,
                       r.generation.prompt)
        )  # fmt: skip
    return found


def _round_zero(attempt, row) -> RoundShown:
    verdict = "unchecked" if row is None or row.verdict is None else row.verdict.value
    return RoundShown(
        0, verdict, "" if row is None or row.stage is None else row.stage.value,
        None if row is None else row.seconds, "" if row is None else row.message or "",
        "" if attempt is None else attempt.proof, "" if attempt is None else attempt.output, None,
    )  # fmt: skip


def every_round_html(rounds: list[RoundShown], escape: Callable[[str], str]) -> str:
    """A collapsed <details>: the verdicts in order on its summary, then each round."""
    path = " → ".join(f"{r.round} {r.verdict}" for r in rounds)
    parts = [_one(r, escape) for r in rounds]
    return (
        f'<details class="inner rounds"><summary>{escape(f"Every round: {path}")}</summary>'
        f"{''.join(parts)}</details>"
    )


def _one(r: RoundShown, escape: Callable[[str], str]) -> str:
    meta = [f"round {r.round}", r.verdict, r.stage]
    if r.seconds is not None:
        meta.append(f"{r.seconds:.3f} s")
    said = "".join(f"<span>{escape(m)}</span>" for m in meta if m)
    if r.message:
        said += f'<span class="message">{escape(r.message)}</span>'
    folded = [("Repair prompt", r.prompt), ("Model output", r.output)]
    extra = "".join(
        f'<details class="inner"><summary>{title}</summary><pre>{escape(text)}</pre></details>'
        for title, text in folded
        if text is not None and text.strip() and text.strip() != r.proof.strip()
    )
    return (
        f'<div class="attempt {escape(r.verdict)}"><div class="meta">{said}</div>'
        f"<pre>{escape(r.proof)}</pre>{extra}</div>"
    )
