"""Make the report pictures the README shows, from a SYNTHETIC run.

The numbers are made up: no model was asked and no prover ran. The script writes a run store
with 12 HOL Light problems in 3 categories, 8 samples each, with a seeded mix of verdicts,
prompts and token counts, then renders the report from it as `proofeval report` does:

    .venv/bin/python docs/make_report_example.py [--run DIR]

writes docs/pass-at-k.png (the pass@k curve), DIR/html/index.html, and
docs/report-screenshot.png (that page in headless Chromium, /usr/bin/chromium).
"""

# ruff: noqa: E501 (the table of example problems reads best one per line)
from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
from pathlib import Path

from proofeval.model import Attempt, Generation, Outcome, Problem, Stage, Verdict
from proofeval.report import plots
from proofeval.report.html import write_html
from proofeval.report.run_data import load_run
from proofeval.store import RunStore

DOCS = Path(__file__).resolve().parent
SAMPLES = 8
CHROMIUM = "/usr/bin/chromium"

# (id, category, statement, a proof that works, how likely a sample is OK)
PROBLEMS = [
    ("arith.ADD_SYM_3", "arithmetic", "`!a b c. a + b + c = c + b + a`", "ARITH_TAC", 0.9),
    ("arith.MULT_MONO", "arithmetic", "`!m n p. m <= n ==> m * p <= n * p`", "SIMP_TAC[LE_MULT_RCANCEL]", 0.6),
    ("arith.EXP_2_SUC", "arithmetic", "`!n. 2 EXP SUC n = 2 * 2 EXP n`", "REWRITE_TAC[EXP]", 0.75),
    ("arith.DIV_LE", "arithmetic", "`!m n. ~(n = 0) ==> m DIV n <= m`", "MESON_TAC[DIV_LE]", 0.25),
    ("bv.WORD_AND_SYM", "bit_vector", "`!x y:int64. word_and x y = word_and y x`", "WORD_BITWISE_TAC", 0.8),
    ("bv.WORD_ADD_0", "bit_vector", "`!x:int64. word_add x (word 0) = x`", "CONV_TAC WORD_RULE", 0.55),
    ("bv.VAL_BOUND", "bit_vector", "`!x:int64. val x < 2 EXP 64`", "REWRITE_TAC[VAL_BOUND_64]", 0.3),
    ("bv.WORD_SHL_MUL", "bit_vector", "`!x:int32. word_shl x 1 = word_mul x (word 2)`", "WORD_BLAST", 0.0),
    ("sets.UNION_COMM", "sets", "`!s t:A->bool. s UNION t = t UNION s`", "SET_TAC[]", 0.95),
    ("sets.SUBSET_TRANS", "sets", "`!s t u:A->bool. s SUBSET t /\\ t SUBSET u ==> s SUBSET u`", "SET_TAC[]", 0.7),
    ("sets.IMAGE_UNION", "sets", "`!f s t. IMAGE f (s UNION t) = IMAGE f s UNION IMAGE f t`", "SET_TAC[]", 0.4),
    ("sets.FINITE_POW", "sets", "`!s:A->bool. FINITE s ==> FINITE {t | t SUBSET s}`", "MESON_TAC[FINITE_POWERSET]", 0.1),
]  # fmt: skip

WRONG = ["ARITH_TAC", "REWRITE_TAC[]", "MESON_TAC[]", "SIMP_TAC[ADD_AC]", "ASM_REWRITE_TAC[]"]
MESSAGES = {
    Verdict.FAIL: 'Failure "REWRITE_TAC: no progress" (1 unsolved goal)',
    Verdict.TIMEOUT: "no verdict within 120 s",
    Verdict.ERROR: "parse error: unbound value SIMP_TACC",
    Verdict.CHEATING: "uses CHEAT_TAC (forbidden)",
}
PROMPT = (
    "You are proving a theorem in HOL Light. Answer with one tactic in a ```ocaml block.\n\n"
    "Goal:\n{statement}\n"
)


def outcome(rng: random.Random, p_ok: float) -> Verdict:
    if rng.random() < p_ok:
        return Verdict.OK
    return rng.choices(
        [Verdict.FAIL, Verdict.TIMEOUT, Verdict.ERROR, Verdict.CHEATING], [70, 12, 14, 4]
    )[0]


def build_run(run_dir: Path, seed: int = 4) -> None:
    rng = random.Random(seed)
    store = RunStore(run_dir)
    try:
        problems = [Problem(pid, stmt, category=cat) for pid, cat, stmt, _, _ in PROBLEMS]
        store.add_problems(problems)
        for pid, _, statement, good, p_ok in PROBLEMS:
            for sample in range(SAMPLES):
                verdict = outcome(rng, p_ok)
                proof = good if verdict is Verdict.OK else rng.choice(WRONG)
                if verdict is Verdict.CHEATING:
                    proof = "CHEAT_TAC"
                output = f"The goal follows by rewriting.\n\n```ocaml\n{proof}\n```"
                attempt = Attempt(pid, sample, output, proof)
                store.add_attempts([attempt])
                seconds = rng.uniform(0.02, 0.4) if verdict is not Verdict.TIMEOUT else 120.0
                stage = Stage.PRECHECK if verdict is Verdict.CHEATING else Stage.CHECK
                store.record(attempt, Outcome(verdict, stage, seconds, MESSAGES.get(verdict, "")))
                gen = Generation(
                    pid,
                    sample,
                    PROMPT.format(statement=statement),
                    output,
                    "synthetic-model",
                    prompt_tokens=180 + len(statement),
                    completion_tokens=rng.randint(40, 900),
                    seconds=rng.uniform(1.5, 9.0),
                )
                store.record_generation(gen)
    finally:
        store.close()


def open_problem(page: Path, problem_id: str) -> Path:
    """A copy of the page with one problem's details open, to show the per-problem view."""
    marker = f'<details class="problem"><summary><span class="pid">{problem_id}</span>'
    html = page.read_text()
    assert marker in html, problem_id
    shown = page.with_name("screenshot.html")
    shown.write_text(html.replace(marker, marker.replace("<details ", "<details open ")))
    return shown


def screenshot(page: Path, png: Path, height: int = 2600) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--screenshot={png}",
                f"--window-size=1280,{height}",
                page.resolve().as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="run directory to write (default: a temporary one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        run_dir = args.run or Path(temp) / "run"
        if (run_dir / "proofeval.sqlite").exists():
            raise SystemExit(f"{run_dir} has a run store already")
        build_run(run_dir)
        run = load_run(run_dir)
        curve = plots.pass_at_k_curve([("synthetic", run.metrics)])
        assert curve is not None
        (DOCS / "pass-at-k.png").write_bytes(curve)
        page = write_html([run], run_dir / "html")
        shown = open_problem(page, "arith.DIV_LE")
        screenshot(shown, DOCS / "report-screenshot.png")
        print(f"wrote {DOCS / 'pass-at-k.png'}, {DOCS / 'report-screenshot.png'} from {page}")


if __name__ == "__main__":
    main()
