"""Coq: honest proofs nobody on this project wrote, checked as answers end to end.

    .venv/bin/python benchmarks/coq_honest_library.py [--files 40] [--replay on]

From the .v files Debian installs for Coq's standard library (Arith, ZArith, Lists, ...),
every top-level `Lemma|Theorem name ... . Proof. ... Qed.` outside sections and modules
becomes a problem: the header is the file's own Require, Import and Open Scope sentences
before it and `Require Import <the file's library>.` (which also brings the original
lemma, so the statement is restated under a fresh name), then the statement, and the
original proof as the answer. Many FAIL for want of the file's local context
(its local notations, hints and scopes); what matters is that none is CHEATING and how
many the first lines refuse (ERROR at precheck), with examples of each.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from proofeval.model import Attempt, Problem, Verdict
from proofeval.provers.coq import CoqChecker
from proofeval.provers.coq.policy import DECLARATIONS
from proofeval.provers.coq.sentences import SentenceError, split
from proofeval.provers.interface import CheckSettings, Job

ROOT = Path("/usr/lib/ocaml/coq/theories")
CONTEXT = ("Require", "Import", "Export", "From", "Open")
DIRECTORIES = ("Arith", "ZArith", "Lists", "Bool", "NArith", "PArith", "Sorting", "Logic")


def cases(file: Path, library: str) -> list[tuple[Problem, str]]:
    """(problem, original proof) of each top-level lemma closed by Qed."""
    try:
        text = file.read_text(errors="replace")
        sentences = split(text)
    except SentenceError:
        return []
    found, depth, i, context = [], 0, 0, []
    while i < len(sentences):
        words = sentences[i].code.split()
        head = words[0] if words else ""
        if depth == 0 and head in CONTEXT or words[:2] == ["Local", "Open"]:
            context.append(sentences[i].text + ".\n")
        elif head in ("Section", "Module") and ":=" not in sentences[i].code:
            depth += 1
        elif head == "End":
            depth = max(0, depth - 1)
        elif head in DECLARATIONS and depth == 0 and len(words) > 1:
            end = next((j for j in range(i + 1, len(sentences))
                        if sentences[j].code.strip() in ("Qed", "Defined", "Admitted",
                                                         "Abort", "Save")), None)  # fmt: skip
            if end is not None and sentences[end].code.strip() == "Qed":
                name = words[1].rstrip(":")
                fresh = f"proofeval_{name}"
                statement = sentences[i].text.replace(name, fresh, 1) + "."
                proof = text[sentences[i].end : sentences[end].end]
                header = "".join(context) + f"Require Import {library}.\n"
                problem = Problem(id=f"{library}.{name}", prover="coq", header=header,
                                  statement=statement)  # fmt: skip
                found.append((problem, proof))
                i = end
        i += 1
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=40, help="library files to take")
    parser.add_argument("--replay", choices=["on", "off"], default="off",
                        help="the second line (default: off, the first line alone)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    files = sorted(f for d in DIRECTORIES for f in (ROOT / d).glob("*.v"))[: args.files]
    jobs = []
    for file in files:
        library = "Coq." + ".".join(file.relative_to(ROOT).with_suffix("").parts)
        for n, (problem, proof) in enumerate(cases(file, library)):
            jobs.append(Job(Attempt(problem.id, n, proof, proof), problem, args.timeout))
    got: list[tuple[str, Verdict, str, str]] = []
    settings = CheckSettings(workers=2, replay=args.replay == "on")
    start = time.monotonic()
    CoqChecker(settings, lambda a, o: got.append((a.problem_id, o.verdict, o.stage.value,
                                                  o.message))).run(jobs)  # fmt: skip
    seconds = time.monotonic() - start
    counts = Counter((v.value, stage) for _, v, stage, _ in got)
    print(f"{len(files)} files, {len(jobs)} honest proofs, {seconds:.0f} s, "
          f"second line {args.replay}")  # fmt: skip
    for (verdict, stage), n in counts.most_common():
        print(f"  {verdict:9} {stage:9} {n:5} ({100 * n / max(len(got), 1):.1f}%)")
    reasons = Counter(
        (v.value, " ".join(message.split())[:36])
        for _, v, _, message in got
        if v in (Verdict.CHEATING, Verdict.ERROR, Verdict.TIMEOUT)
    )
    for (verdict, reason), n in reasons.most_common(12):
        example = next(pid for pid, v, _, m in got if " ".join(m.split())[:36] == reason)
        print(f"  {verdict:9} {n:5}  {reason}...  e.g. {example}")


if __name__ == "__main__":
    main()
