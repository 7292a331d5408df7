"""What the Coq rules against 8.16's kernel bugs cost honest proofs, on proofs nobody on
this project wrote (the .v sources Debian installs: Coq's standard library, std++,
MathComp, Coquelicot, Flocq, CoqHammer, ...):

    .venv/bin/python benchmarks/coq_rule_cost.py [ROOT ...] [--audit N]

1. The answer-language rules (policy.KERNEL_RISKS and the VM/native casts): every proof
   script (the sentences between a declaration or `Proof` and its Qed/Defined) is
   screened sentence by sentence as an answer would be; each rule counts the proofs it
   would refuse, with examples.
2. `--audit N`: the proof-term audit on the compiled theorems of the first N files that
   hold Qed proofs: in one coqtop per file, Require it, snapshot (the audit then trusts
   every other constant) and audit each theorem's own proof term; counts those that
   would not be OK.
"""

from __future__ import annotations

import argparse
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from proofeval.provers.coq import audit
from proofeval.provers.coq.policy import (
    CAST_SYMBOLS,
    DECLARATIONS,
    KERNEL_RISKS,
    TOKEN,
    Refusal,
    _screen_kernel_risks,
)
from proofeval.provers.coq.sentences import Sentence, SentenceError, split
from proofeval.provers.coq.session import framed

ROOTS = [Path("/usr/lib/ocaml/coq")]
OPENERS = DECLARATIONS | {"Proof", "Definition", "Fixpoint", "Instance", "Goal", "Next",
                          "Obligation", "Let", "CoFixpoint", "Program"}  # fmt: skip
CLOSERS = {"Qed", "Defined", "Admitted", "Abort", "Save"}
FIRST = re.compile(r"[A-Za-z_][\w']*")


def proofs(sentences: list[Sentence]) -> list[tuple[list[Sentence], str]]:
    """(body, closer) of every proof: the sentences after the last opener before a closer."""
    found, body = [], None
    for sentence in sentences:
        word = FIRST.match(sentence.code)
        word = word[0] if word else ""
        if word in CLOSERS and sentence.code.strip() == word:
            if body:
                found.append((body, word))
            body = None
        elif word in OPENERS:
            body = []
        elif body is not None:
            body.append(sentence)
    return found


def rule_of(sentence: Sentence) -> str | None:
    """Which rule refuses `sentence`, or None."""
    try:
        _screen_kernel_risks(sentence)
    except Refusal:
        for token in TOKEN.finditer(sentence.code):
            if token[0] in KERNEL_RISKS:
                return token[0]
        return next(f"cast {s}" for s in CAST_SYMBOLS if s in sentence.code)
    return None


def screen(roots: list[Path]) -> None:
    files = sorted({f.resolve() for root in roots for f in root.rglob("*.v")})
    total, unsplit, refused = 0, 0, Counter()
    refused_any = 0
    examples: dict[str, list[str]] = defaultdict(list)
    by_dir: Counter[str] = Counter()
    for file in files:
        try:
            sentences = split(file.read_text(errors="replace"))
        except SentenceError:
            unsplit += 1
            continue
        for body, _closer in proofs(sentences):
            total += 1
            rules = {r for s in body if (r := rule_of(s)) is not None}
            for rule in rules:
                refused[rule] += 1
                if len(examples[rule]) < 3:
                    examples[rule].append(
                        f"{file}: {next(s.text for s in body if rule_of(s) == rule)[:70]}"
                    )
            if rules:
                refused_any += 1
                by_dir[str(file.parent)] += 1
    print(f"{len(files)} .v files under {', '.join(map(str, roots))}; {unsplit} not split "
          f"(text sentences.py refuses); {total} proofs")  # fmt: skip
    print(f"refused by any new rule: {refused_any} ({100 * refused_any / max(total, 1):.2f}%)")
    for rule, n in refused.most_common():
        print(f"  {rule:22} {n:6} ({100 * n / max(total, 1):.2f}%)  e.g. {examples[rule][0]}")
    print("where:", ", ".join(f"{d.split('/coq/', 1)[-1]} {n}" for d, n in by_dir.most_common(8)))


def logical_name(file: Path) -> str | None:
    """The library's logical name for an installed .v file (Coq.X.Y or user-contrib)."""
    parts = file.with_suffix("").parts
    if "theories" in parts:
        return "Coq." + ".".join(parts[parts.index("theories") + 1 :])
    if "user-contrib" in parts:
        return ".".join(parts[parts.index("user-contrib") + 1 :])
    return None


def theorem_names(sentences: list[Sentence]) -> list[str]:
    """Qualified (by module nesting) names of the declarations closed by Qed."""
    names, modules, current = [], [], None
    for sentence in sentences:
        words = sentence.code.split()
        if not words:
            continue
        if (
            words[0] == "Module"
            and len(words) > 1
            and words[1] != "Type"
            and ":=" not in sentence.code
        ):
            modules.append(words[1])
        elif words[0] == "End" and len(words) > 1 and modules and modules[-1] == words[1]:
            modules.pop()
        elif words[0] in DECLARATIONS and len(words) > 1:
            current = FIRST.match(words[1])
            current = current[0] if current else None
        elif words[0] == "Qed" and current:
            names.append(".".join([*modules, current]))
            current = None
    return names


def audit_files(roots: list[Path], count: int) -> None:
    files = sorted({f.resolve() for root in roots for f in root.rglob("*.v")})
    findlib = audit.install_into(Path(tempfile.mkdtemp(prefix="proofeval-audit-cost-")))
    conf = findlib.parent / "findlib.conf"
    conf.write_text(f'path="{findlib}:/usr/lib/ocaml:/usr/lib/ocaml/METAS"\n')
    done, audited, refused, unknown, seconds = 0, 0, Counter(), 0, 0.0
    examples: list[str] = []
    for file in files:
        if done >= count:
            break
        library = logical_name(file)
        if library is None or not file.with_suffix(".vo").exists():
            continue
        try:
            names = theorem_names(split(file.read_text(errors="replace")))
        except SentenceError:
            continue
        if not names:
            continue
        done += 1
        commands = [f'Declare ML Module "{audit.PACKAGE}.plugin".', f"Require {library}.",
                    "ProofevalSnapshot."]  # fmt: skip
        nonce = secrets.token_hex(8)
        commands += [f'ProofevalAudit "{nonce}" {library}.{name}.' for name in names]
        start = time.monotonic()
        out = subprocess.run(
            ["coqtop", "-q"],
            input="\n".join(commands) + "\n",
            capture_output=True,
            text=True,
            env={"OCAMLFIND_CONF": str(conf), "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
            timeout=600,
        ).stdout
        seconds += time.monotonic() - start
        replies = [framed(line, nonce) for line in out.splitlines() if nonce in line]
        audited += sum(word in ("clean", "found") for word, _ in replies)
        unknown += len(names) - sum(word in ("clean", "found") for word, _ in replies)
        for finding in (f for word, found in replies if word == "found" for f in found):
            refused[finding.split(" in ")[0]] += 1
            if len(examples) < 8:
                examples.append(finding)
    total = sum(refused.values())
    print(f"audit: {done} library files, {audited} Qed theorems audited ({unknown} names not "
          f"resolved), {seconds:.0f} s of coqtop")  # fmt: skip
    print(f"findings: {total} ({100 * total / max(audited, 1):.2f}% of audited theorems)")
    for what, n in refused.most_common():
        print(f"  {n:6}  {what}")
    for example in examples:
        print(f"  e.g. {example}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path, help="directories of .v files")
    parser.add_argument("--audit", type=int, default=0, metavar="N",
                        help="also audit the compiled theorems of N library files")  # fmt: skip
    args = parser.parse_args()
    roots = args.roots or ROOTS
    screen(roots)
    if args.audit:
        audit_files(roots, args.audit)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
