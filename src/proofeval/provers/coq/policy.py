"""What an answer may say: the first integrity layer, before Coq sees anything.

An answer is a proof script: optional auxiliary lemmas (each stated, proved with the same
rules and closed by Qed or Defined), then the main proof: an optional `Proof.`, tactic
sentences, bullets and braces, and an optional closing `Qed.` or `Defined.` (Qed is
added when absent). The benchmark's theorem restated before its proof (what most
models write) is dropped, restated exactly or not: its proof is checked against the
benchmark's own statement. Everything else is refused: what escapes proving or declares
what was not proved is CHEATING (also after a goal selector: `1: Admitted.`), other text
is ERROR (not proof sentences), and so is what reaches a known kernel bug of Coq 8.16
(KERNEL_RISKS: `fix`/`cofix` terms and tactics, VM and native conversion), wherever it
stands: tactic arguments, `ltac:(...)`, auxiliary lemmas.

This is an early, cheap refusal, never the authority: the checker hands Coq the
answer's own text (`prepare`: the lemmas, the benchmark's statement, the proof, Qed when
it is missing), and the plugin judges Coq's own parse of it (plugin/judge.ml). Proof
states run single steps, which `steps` writes as `(tactic).` after any goal selector, so
that Coq's parser accepts each only as one Ltac expression.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from proofeval.provers.coq.sentences import Sentence, SentenceError, mask, split

DECLARATIONS = {
    "Theorem", "Lemma", "Fact", "Remark", "Corollary", "Proposition", "Property", "Example",
}  # fmt: skip
CLOSERS = {"Qed", "Defined"}
# Commands that escape proving, or admit what was not proved: CHEATING.
ESCAPES = {
    "Admitted", "Abort", "Axiom", "Axioms", "Parameter", "Parameters", "Conjecture",
    "Variable", "Variables", "Hypothesis", "Hypotheses", "Context", "Declare", "Load",
    "Drop", "Redirect", "Extraction", "Recursive", "Separate", "Extract", "Require",
    "Import", "Export", "From", "Set", "Unset", "Local", "Global", "Fail", "Succeed",
    "Reset", "Back", "BackTo", "Undo", "Restart", "Quit", "Cd", "Add", "Remove",
    "Register", "Primitive",
}  # fmt: skip
# Other commands: not part of a proof script here (ERROR). Capitalized words in neither set
# go to Coq as tactics (a header may define such tactics), parenthesized.
COMMANDS = {
    "Check", "Compute", "Eval", "Print", "Search", "SearchPattern", "SearchRewrite",
    "SearchHead", "About", "Locate", "Show", "Definition", "Fixpoint", "CoFixpoint",
    "Inductive", "CoInductive", "Variant", "Record", "Structure", "Class", "Instance",
    "Existing", "Ltac", "Ltac2", "Tactic", "Notation", "Infix", "Reserved", "Hint",
    "Module", "Section", "End", "Open", "Close", "Arguments", "Implicit", "Opaque",
    "Transparent", "Strategy", "Let", "Obligation", "Next", "Solve", "Focus", "Unfocus",
    "Unfocused", "Guarded", "Info", "Debug", "Canonical", "Coercion", "Scheme", "Derive",
    "Functional", "Generalizable", "Typeclasses", "Create", "Comments", "Proof", "Abbreviation",
    "Goal", "Save", "Polymorphic", "Monomorphic", "Program", "Unshelve", "Time", "Timeout",
    "Instructions", "Optimize",
}  # fmt: skip
CHEAT_TACTICS = re.compile(r"(?<![\w'])(admit|give_up)(?![\w'])")
# What reaches Coq 8.16.1's known kernel bugs from an answer (dev/doc/critical-bugs.md of
# rocq-prover/rocq): a fixpoint or cofixpoint the answer builds (the guard checker accepts
# some that do not terminate, fixed only in Rocq 9.0.1; coqchk shares the code), and VM or
# native conversion called directly (the VM miscomputes Uint63.addmuldiv, fixed in 8.20;
# native_compute cannot run on this Debian Coq at all). Decided on identifier tokens of
# the masked text (comments and strings blanked), wherever they stand.
KERNEL_RISKS = {
    "fix": "builds its own fixpoint, which Coq 8.16's guard checker may wrongly accept",
    "cofix": "builds its own cofixpoint, which Coq 8.16's guard checker may wrongly accept",
    "vm_compute": "calls the VM, which miscomputes primitive integers in Coq 8.16",
    "vm_cast_no_check": "calls the VM, which miscomputes primitive integers in Coq 8.16",
    "native_compute": "calls native_compute, which this Coq cannot run and which shares "
    "the VM's known bugs",
    "native_cast_no_check": "calls native conversion, which this Coq cannot run",
}
# `t <: T` and `t <<: T` cast by VM and native conversion.
CAST_SYMBOLS = ("<:", "<<:")
TOKEN = re.compile(r"[^\W\d][\w']*")
UNSAFE = re.compile(r"bypass_check|Guard\s+Checking|Positivity\s+Checking|Universe\s+Checking")
FIRST_WORD = re.compile(r"[A-Za-z_][\w']*")
IDENT = re.compile(r"[A-Za-z_][\w']*")
SELECTOR = re.compile(
    r"(?:all|par|!|\d+(?:\s*-\s*\d+)?(?:\s*,\s*\d+(?:\s*-\s*\d+)?)*|\[\s*[A-Za-z_][\w']*\s*\])"
    r"\s*:(?![=:>])"
)
PROOF_OPENER = re.compile(r"Proof(\s+(using|with)\b.*)?", re.DOTALL)
STATEMENT = re.compile(r"\s*(" + "|".join(sorted(DECLARATIONS)) + r")\s+([A-Za-z_][\w']*)")


class Refusal(Exception):
    """The answer is refused before Coq sees it: `cheating` or not proof sentences."""

    def __init__(self, message: str, cheating: bool) -> None:
        super().__init__(message)
        self.cheating = cheating


@dataclass(frozen=True)
class Script:
    """A screened answer as the checker hands it to Coq: `lemmas` (the answer's own text)
    go before the benchmark's statement, `proof` (the answer's own text, with a closing
    Qed when it had none) after it."""

    lemmas: str
    proof: str


def theorem_name(statement: str) -> str | None:
    """The name a benchmark statement (`Theorem name : ... .`) declares, or None."""
    match = STATEMENT.match(mask(statement))
    return match[2] if match else None


def prepare(answer: str, theorem: str) -> Script:
    """The answer split around the benchmark's statement; Refusal if it may not be checked."""
    sentences = _screened(answer, theorem)
    names: set[str] = {theorem}
    i = 0
    while i < len(sentences) and _word(sentences[i]) in DECLARATIONS:
        if _restates(sentences[i], theorem):
            break
        i = _lemma(sentences, i, names)
    lemmas = answer[: sentences[i].start] if i < len(sentences) else answer
    if i < len(sentences) and _restates(sentences[i], theorem):
        i += 1  # the benchmark's theorem restated: its proof is checked against ours
    begin = sentences[i].start if i < len(sentences) else len(answer)
    closer, i = _proof(sentences, i)
    if i < len(sentences):
        raise Refusal(f"text after the proof is closed: {_show(sentences[i])}", cheating=True)
    return Script(lemmas, answer[begin:] + ("" if closer else "\nQed."))


def steps(tactic: str, theorem: str) -> list[str]:
    """A proof state's step as sentences written `(tactic).` after any goal selector."""
    sentences = _screened(tactic, theorem)
    if sentences and _word(sentences[0]) in DECLARATIONS:
        raise Refusal("lemmas cannot be stated in a proof state", cheating=False)
    _closer, end = _proof(sentences, 0)
    if end < len(sentences):
        raise Refusal(f"text after the proof is closed: {_show(sentences[end])}", cheating=True)
    return [render(s) for s in sentences if not _opens(s)]


def _screened(answer: str, theorem: str) -> list[Sentence]:
    try:
        sentences = split(answer)
    except SentenceError as exc:
        raise Refusal(f"does not parse as Coq sentences: {exc}", cheating=False) from None
    for sentence in sentences:
        if not _restates(sentence, theorem):  # left out unread: nothing of it reaches Coq
            _screen(sentence)
    return sentences


def _screen(sentence: Sentence) -> None:
    """Refuse a sentence that escapes proving wherever it stands."""
    code = sentence.code
    if UNSAFE.search(code) or code.lstrip().startswith("#["):
        raise Refusal(f"unsafe flag or attribute: {_show(sentence)}", cheating=True)
    if CHEAT_TACTICS.search(code):
        raise Refusal(f"admits a goal: {_show(sentence)}", cheating=True)
    _screen_kernel_risks(sentence)
    word = _command_word(sentence)
    if word in ESCAPES:
        raise Refusal(f"{word} is not allowed in a proof: {_show(sentence)}", cheating=True)
    if word in COMMANDS and not _opens(sentence):
        raise Refusal(f"not a proof sentence: {_show(sentence)}", cheating=False)
    if sentence.ellipsis:
        raise Refusal(f"`...` is not supported: {_show(sentence)}", cheating=False)
    if sentence.kind == "text" and not code.strip():
        raise Refusal("an empty sentence (a lone period)", cheating=False)


def _screen_kernel_risks(sentence: Sentence) -> None:
    """Refuse what reaches a known kernel bug (KERNEL_RISKS): ERROR, since honest proofs
    use these too, but no verdict of Coq 8.16 on them can be trusted."""
    for token in TOKEN.finditer(sentence.code):
        risk = KERNEL_RISKS.get(token[0])
        if risk is not None:
            raise Refusal(f"`{token[0]}` is not allowed: it {risk}: {_show(sentence)}", False)
    for symbol in CAST_SYMBOLS:
        if symbol in sentence.code:
            raise Refusal(
                f"the `{symbol}` cast calls VM or native conversion, which Coq 8.16 "
                f"gets wrong: {_show(sentence)}",
                cheating=False,
            )


def _restates(sentence: Sentence, theorem: str) -> bool:
    """Whether `sentence` states the benchmark's theorem (by its name)."""
    return _word(sentence) in DECLARATIONS and _declared_name(sentence) == theorem


def _declared_name(head: Sentence) -> str | None:
    """The name a declaration sentence (`Lemma name ...`) declares, or None."""
    name = IDENT.match(head.code[len(_word(head)) :].lstrip())
    return name[0] if name else None


def _lemma(sentences: list[Sentence], i: int, names: set[str]) -> int:
    """Check the auxiliary lemma at sentences[i]; the index after it."""
    head = sentences[i]
    name = _declared_name(head)
    if name is None:
        raise Refusal(f"a lemma without a name: {_show(head)}", cheating=False)
    if name in names:
        raise Refusal(f"a second theorem named {name}", cheating=True)
    names.add(name)
    closer, end = _proof(sentences, i + 1)
    if closer is None:
        raise Refusal(f"lemma {name} does not end with Qed or Defined", cheating=False)
    return end


def _proof(sentences: list[Sentence], i: int) -> tuple[str | None, int]:
    """The proof starting at sentences[i]: its closer (None when it runs to the end of
    the answer) and the index after it."""
    if i < len(sentences) and _opens(sentences[i]):
        i += 1
    while i < len(sentences):
        sentence = sentences[i]
        word = _word(sentence)
        i += 1
        if word in CLOSERS and sentence.code.strip() == word:
            return word, i
        if word in DECLARATIONS:
            raise Refusal(f"states a theorem inside a proof: {_show(sentence)}", cheating=True)
        if _opens(sentence):
            raise Refusal("a second Proof inside a proof", cheating=False)
    return None, i


def _opens(sentence: Sentence) -> bool:
    """`Proof.`, `Proof using ...` or `Proof with ...` (not `Proof term.`)."""
    return PROOF_OPENER.fullmatch(sentence.code.strip()) is not None


def render(sentence: Sentence) -> str:
    """A sentence as the checker writes it: a tactic parenthesized after its selector."""
    if sentence.kind != "text":
        return sentence.text
    selector = SELECTOR.match(sentence.code)
    cut = 0 if selector is None else selector.end()
    return f"{sentence.text[:cut]} ({sentence.text[cut:].strip()})."


def _word(sentence: Sentence) -> str:
    match = FIRST_WORD.match(sentence.code)
    return match[0] if match else ""


def _command_word(sentence: Sentence) -> str:
    """The first word after any goal selector: `1: Admitted.` is still Admitted."""
    selector = SELECTOR.match(sentence.code)
    rest = sentence.code if selector is None else sentence.code[selector.end() :].lstrip()
    match = FIRST_WORD.match(rest)
    return match[0] if match else ""


def _show(sentence: Sentence, limit: int = 60) -> str:
    text = " ".join(sentence.text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
