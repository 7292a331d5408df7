"""inspect_ai tasks for the benchmarks proofeval reads, through its loaders and with its
prompt templates: `inspect eval proofeval/demo --model ...`. `epochs`: attempts per
problem, reduced to inspect's mean and to proofeval's pass@k for k = 1, 2, 4, ... up to
epochs; `agent=True`: the model proves with the proof-state tools instead of answering
once."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import ScoreReducer
from inspect_ai.solver import Solver, generate

from proofeval.errors import InputError
from proofeval.generate.prompts import render
from proofeval.integrations.inspect_scorer import PROBLEM, pass_at, proof_checker
from proofeval.integrations.inspect_tools import prove_with_tools
from proofeval.integrations.verifier import allow_directories, problem_fields
from proofeval.loaders import Benchmark, Selection, load_benchmark
from proofeval.metrics import report_ks
from proofeval.model import Problem


def demo_problems() -> Path:
    return Path(str(resources.files("proofeval") / "demo" / "problems.jsonl"))


def samples(problems: list[Problem], template: str = "") -> list[Sample]:
    """One sample per problem: its prompt from proofeval's template (the prover's default
    when `template` is ""), the problem in metadata; never its reference proof."""
    return [
        Sample(
            input=render(template or None, p),
            id=p.id,
            metadata={PROBLEM: problem_fields(p), "category": p.category},
        )
        for p in problems
    ]


def reducers(epochs: int) -> list[str | ScoreReducer]:
    """inspect's mean, and proofeval's pass@k at the k proofeval reports for n = epochs."""
    return ["mean", *(pass_at(k) for k in report_ks([epochs]) if epochs > 1)]


def proof_task(
    bench: Benchmark, epochs: int = 1, template: str = "", agent: bool = False,
    timeout: float | None = None, message_limit: int = 40,
) -> Task:  # fmt: skip
    """The task of a loaded benchmark."""
    if not bench.problems:
        raise InputError(f"{bench.source}: no problems")
    allow_directories(Path(p.directory) for p in bench.problems if p.directory)
    solver: Solver = prove_with_tools(timeout=timeout or 60.0) if agent else generate()
    return Task(
        dataset=MemoryDataset(samples(bench.problems, template), name=bench.name),
        solver=solver,
        scorer=proof_checker(timeout),
        epochs=Epochs(epochs, reducers(epochs)),
        message_limit=message_limit if agent else None,
    )


def _load(path: str, only: str, limit: int | None, want: str = "", **selection: str) -> Benchmark:
    manifest = selection.pop("manifest", "")
    chosen = Selection(Path(manifest) if manifest else None, (only,) if only else (), limit=limit,
                       **selection)  # fmt: skip
    bench = load_benchmark(Path(path), chosen)
    provers = sorted({p.prover for p in bench.problems})
    if want and provers and provers != [want]:
        raise InputError(f"{path}: its problems are for {', '.join(provers)}, not {want}")
    return bench


@task
def demo(
    only: str = "", limit: int | None = None, epochs: int = 1, template: str = "",
    agent: bool = False, timeout: float | None = None,
) -> Task:  # fmt: skip
    """The embedded demo: HOL Light and Coq problems (`proofeval demo`'s)."""
    bench = _load(str(demo_problems()), only, limit)
    return proof_task(bench, epochs, template, agent, timeout)


@task
def benchmark(
    path: str, only: str = "", limit: int | None = None, epochs: int = 1, template: str = "",
    agent: bool = False, timeout: float | None = None, categories: str = "directory",
    manifest: str = "",
) -> Task:  # fmt: skip
    """Any benchmark `proofeval problems` reads (a JSONL file of problems, or a directory
    in one of its layouts); `only` and `limit` select as --only and --limit do."""
    bench = _load(path, only, limit, categories=categories, manifest=manifest)
    return proof_task(bench, epochs, template, agent, timeout)


def _named(name: str, want: str, doc: str):  # -> a task function of a path
    def named(
        path: str, only: str = "", limit: int | None = None, epochs: int = 1,
        template: str = "", agent: bool = False, timeout: float | None = None,
    ) -> Task:  # fmt: skip
        return proof_task(_load(path, only, limit, want), epochs, template, agent, timeout)

    named.__name__ = named.__qualname__ = name
    named.__doc__ = doc
    return task(named)


jsonl = _named("jsonl", "", "A .jsonl file of problems (proofeval's or NeMo-Skills').")
minif2f_rocq = _named("minif2f_rocq", "coq", "miniF2F for Rocq: test/ and valid/ of .v files.")
minif2f_hol_light = _named(
    "minif2f_hol_light", "hol-light", "miniF2F for HOL Light: test/ and valid/ of .ml files."
)
s2n_bignum = _named(
    "s2n_bignum", "hol-light", "s2n-bignum-bench: an official build, or <id>/setup.ml + query.txt."
)
putnam_rocq = _named("putnam_rocq", "coq", "PutnamBench's Rocq problems: its coq/ (or coq/src/).")
ntp4vc = _named("ntp4vc", "coq", "NTP4VC's Rocq problems, as published.")
