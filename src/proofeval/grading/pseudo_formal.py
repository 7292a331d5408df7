"""Pseudo-formalisation with block verification, in waves of parallel calls.

For each item and run:
1. rewrite the proof (or paper) into tagged modules (grading/modules.py) and check its
   structure; 2. check every module's faithfulness to the original, one call per module;
3. while the rewrite does not parse or a module is unfaithful, ask again with the errors
   (at most `retries` times; then the grading fails); 4. verify every module on its own, all
   in parallel, with its ancestors' statements as context and the statements of the modules
   it uses as established results; 5. calibrate: map the flagged modules back to the
   original's steps (yes/no per step) or to the paper's result labels. With no module
   flagged, calibration needs no call: every step is correct, no error is found.

Calls per grading: the rewrites, a faithfulness check per module of each rewrite that
parsed, a verification per module of the accepted rewrite, and 0 or 1 calibration.
Every call is in the store; `details` of each grading keeps the modules with what each
stage said of them. A stage whose answer cannot be parsed fails the grading (counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proofeval.grading.calls import Asker, Call, Key
from proofeval.grading.items import Item
from proofeval.grading.modules import Module, ancestors, parse_modules, render
from proofeval.grading.parse import Unparsed, error_list, failure, json_answer, yes_no_list
from proofeval.grading.result import Grading, failed, from_steps
from proofeval.grading.templates import render as render_template


@dataclass
class _State:
    """One item's grading in one run, as it moves through the stages."""

    item: Item
    run: int
    calls: int = 0
    attempts: list[dict] = field(default_factory=list)  # each rewrite and its errors
    modules: list[Module] | None = None  # the accepted rewrite
    verdicts: dict[str, dict] = field(default_factory=dict)
    result: Grading | None = None

    @property
    def open(self) -> bool:
        return self.result is None

    def fail(self, reason: str) -> None:
        self.result = failed(self.item.id, self.run, reason, self.details())

    def details(self) -> dict:
        return {
            "calls": self.calls,
            "attempts": self.attempts,
            "modules": [
                {**_module_doc(m), **self.verdicts.get(m.id, {})} for m in self.modules or []
            ],
        }


def _module_doc(m: Module) -> dict:
    return {
        "id": m.id,
        "kind": m.kind,
        "label": m.label,
        "parent": m.parent,
        "uses": list(m.uses),
        "steps": list(m.steps),
        "statement": m.statement,
        "proof": m.proof,
    }


def _original(item: Item) -> dict:
    return {"problem": item.problem, "steps": list(item.steps), "proof": item.proof}


def grade(items: list[Item], runs: int, asker: Asker, retries: int) -> list[Grading]:
    states = [_State(item, r) for item in items for r in range(runs)]
    for attempt in range(retries + 1):
        pending = [s for s in states if s.open and s.modules is None]
        if not pending:
            break
        _rewrite(pending, attempt, asker)
    for s in states:
        if s.open and s.modules is None:
            last = s.attempts[-1]["errors"] if s.attempts else []
            s.fail(f"rewrite: no faithful rewrite in {len(s.attempts)} attempts: {'; '.join(last)}")
    _verify([s for s in states if s.open], asker)
    _calibrate([s for s in states if s.open], asker)
    return [s.result for s in states if s.result is not None]


def _rewrite(states: list[_State], attempt: int, asker: Asker) -> None:
    calls = {}
    for s in states:
        previous = s.attempts[-1] if s.attempts else {}
        prompt = render_template(
            "pf_rewrite",
            **_original(s.item),
            previous=previous.get("output", ""),
            errors=previous.get("errors", []),
        )
        calls[id(s)] = Call(s.item.id, s.run, f"rewrite.{attempt}", prompt)
    answers = asker.ask(list(calls.values()), f"rewriting (attempt {attempt + 1})")
    parsed: list[tuple[_State, list[Module], str]] = []
    for s in states:
        output = answers[calls[id(s)].key]
        s.calls += 1
        steps = len(s.item.steps) if s.item.kind == "steps" else None
        why = failure(output)
        modules, errors = ([], [why]) if why is not None else parse_modules(output, steps)
        s.attempts.append({"output": output, "errors": errors})
        if not errors:
            parsed.append((s, modules, output))
    _faithfulness(parsed, attempt, asker)


def _faithfulness(parsed: list[tuple[_State, list[Module], str]], attempt: int, asker: Asker):
    calls: dict[Key, Call] = {}
    for s, modules, _ in parsed:
        rewrite = render(modules)
        for m in modules:
            prompt = render_template("pf_faithful", **_original(s.item), rewrite=rewrite, module=m)
            call = Call(s.item.id, s.run, f"faithful.{attempt}:{m.id}", prompt)
            calls[call.key] = call
    answers = asker.ask(list(calls.values()), "checking faithfulness")
    for s, modules, _ in parsed:
        errors = []
        for m in modules:
            s.calls += 1
            output = answers[(s.item.id, s.run, f"faithful.{attempt}:{m.id}")]
            try:
                answer = json_answer(output)
                if not isinstance(answer.get("faithful"), bool):
                    raise Unparsed('"faithful" is not true or false')
            except Unparsed as exc:
                errors.append(f"module {m.id}: the faithfulness check gave no verdict ({exc})")
                continue
            if not answer["faithful"]:
                problems = answer.get("problems") or ["not faithful"]
                problems = problems if isinstance(problems, list) else [problems]
                errors.append(f"module {m.id} is not faithful: {'; '.join(map(str, problems))}")
        s.attempts[-1]["errors"] = errors
        if not errors:
            s.modules = modules


def _verify(states: list[_State], asker: Asker) -> None:
    calls: dict[Key, Call] = {}
    for s in states:
        modules = s.modules or []
        by_id = {m.id: m for m in modules}
        for m in modules:
            prompt = render_template(
                "pf_verify",
                problem=s.item.problem if s.item.kind == "steps" else "",
                context=ancestors(m, modules),
                established=[by_id[u] for u in m.uses],
                module=m,
            )
            call = Call(s.item.id, s.run, f"verify:{m.id}", prompt)
            calls[call.key] = call
    answers = asker.ask(list(calls.values()), "verifying modules")
    for s in states:
        unparsed = []
        for m in s.modules or []:
            s.calls += 1
            output = answers[(s.item.id, s.run, f"verify:{m.id}")]
            try:
                s.verdicts[m.id] = _module_verdict(output)
            except Unparsed as exc:
                s.verdicts[m.id] = {"output": output}
                unparsed.append(f"module {m.id}: {exc}")
        if unparsed:
            s.fail(f"verify: {'; '.join(unparsed)}")


def _module_verdict(output: str) -> dict:
    answer = json_answer(output)
    verdict = answer.get("verdict")
    if verdict not in ("correct", "incorrect"):
        raise Unparsed('"verdict" is not "correct" or "incorrect"')
    issues = answer.get("issues", [])
    if not isinstance(issues, list) or not all(isinstance(i, dict) for i in issues):
        raise Unparsed('"issues" is not a list of objects')
    issues = [
        {"location": str(i.get("location", "")), "description": str(i.get("description", ""))}
        for i in issues
    ]
    return {"verdict": verdict, "issues": issues, "output": output}


def _calibrate(states: list[_State], asker: Asker) -> None:
    calls: dict[int, Call] = {}
    for s in states:
        flagged = [
            {"module": m, "issues": s.verdicts[m.id]["issues"]}
            for m in s.modules or []
            if s.verdicts[m.id]["verdict"] == "incorrect"
        ]
        if not flagged:
            s.result = _clean(s)
            continue
        prompt = render_template("pf_calibrate", **_original(s.item), flagged=flagged)
        calls[id(s)] = Call(s.item.id, s.run, "calibrate", prompt)
    answers = asker.ask(list(calls.values()), "calibrating")
    for s in states:
        if id(s) not in calls:
            continue
        s.calls += 1
        output = answers[calls[id(s)].key]
        details = {**s.details(), "calibration": output}
        try:
            if s.item.kind == "steps":
                s.result = from_steps(s.item.id, s.run, yes_no_list(json_answer(output)), details)
            else:
                s.result = Grading(
                    s.item.id, s.run, True, errors=error_list(output), details=details
                )
        except Unparsed as exc:
            s.result = failed(s.item.id, s.run, f"calibrate: {exc}", details)


def _clean(s: _State) -> Grading:
    """No module flagged: every step correct, no error found (no calibration call)."""
    details = {**s.details(), "calibration": None}
    if s.item.kind == "steps":
        return from_steps(s.item.id, s.run, [1] * len(s.item.steps), details)
    return Grading(s.item.id, s.run, True, errors=[], details=details)
