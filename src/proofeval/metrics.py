"""Every number a report shows: pass@k, pass@1 with its standard error, verdict counts.

Definitions (all reports use these, and only these):

- A problem's n and c: its checked attempts (those with a verdict) and the OK ones among
  them. Unchecked attempts (verdict None: not checked yet) count in neither. A problem with
  no checked attempt (n = 0, including a problem of the run with no attempt at all) counts
  as unsolved: 0 in pass@k and pass@1, never left out, and is named in
  `RunMetrics.unevaluated`. No score can rise by leaving problems unanswered.
- pass@k of a problem: the unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al. 2021),
  the chance that k attempts drawn without replacement from its n include an OK one (0
  for n = 0). The pass@k of a run or category is its mean over all its problems. The k
  reported are the powers of two up to the smallest positive n, plus that n (n = 8: 1, 2,
  4, 8; n = 10: 1, 2, 4, 8, 10); none when nothing is checked.
- pass@1 (avg-of-n): the mean over all problems of the per-problem success rate c/n (0 for
  n = 0), with its standard error: the sample standard deviation (ddof = 1) of those
  per-problem rates divided by the square root of the number of problems, i.e. the
  standard error of the mean over problems. None when nothing is checked; no standard
  error with fewer than two problems.
- Verdict counts count attempts. ok_share = OK / (all attempts + problems with no attempt):
  unchecked attempts count as not OK, and a problem with no attempt as one attempt that is
  not OK, as OK/Tot does in the paper table; timeout_share = TIMEOUT / checked attempts.
- Generation figures (from the run's generations table, when it has rows): means per
  completion of prompt tokens, completion tokens and seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from proofeval.model import Generation, Problem, Verdict
from proofeval.store import ResultRow


@dataclass(frozen=True)
class ProblemScore:
    """One problem's attempts: all of them, the checked ones (n), the OK ones (c)."""

    problem_id: str
    category: str
    attempts: int = 0
    verdicts: dict[Verdict, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return sum(self.verdicts.values())

    @property
    def c(self) -> int:
        return self.verdicts.get(Verdict.OK, 0)


@dataclass(frozen=True)
class Estimate:
    """A mean over problems with its standard error (None with fewer than two problems)."""

    mean: float
    stderr: float | None
    problems: int


@dataclass(frozen=True)
class Breakdown:
    """The numbers of a set of problems: a category, or the whole run."""

    problems: int
    evaluated: int
    attempts: int
    unattempted: int  # problems with no attempt at all
    verdicts: dict[Verdict, int]
    pass_at_k: dict[int, float]
    pass_at_1: Estimate | None

    @property
    def checked(self) -> int:
        return sum(self.verdicts.values())

    @property
    def unchecked(self) -> int:
        return self.attempts - self.checked

    @property
    def ok_share(self) -> float | None:
        total = self.attempts + self.unattempted
        return self.verdicts[Verdict.OK] / total if total else None

    @property
    def timeout_share(self) -> float | None:
        return self.verdicts[Verdict.TIMEOUT] / self.checked if self.checked else None


@dataclass(frozen=True)
class GenerationStats:
    completions: int
    models: tuple[str, ...]
    mean_prompt_tokens: float
    mean_completion_tokens: float
    mean_seconds: float
    total_tokens: int


@dataclass(frozen=True)
class RunMetrics:
    ks: tuple[int, ...]
    overall: Breakdown
    categories: dict[str, Breakdown]
    unevaluated: tuple[str, ...]
    generation: GenerationStats | None
    scores: tuple[ProblemScore, ...]


def pass_at_k(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k), as 1 - prod_{i=n-c+1..n} (1 - k/i): no huge binomials."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    failure = 1.0
    for i in range(n - c + 1, n + 1):
        failure *= 1.0 - k / i
    return 1.0 - failure


def report_ks(ns: Iterable[int]) -> tuple[int, ...]:
    """The k to report: powers of two up to the smallest positive n, plus that n."""
    positive = [n for n in ns if n > 0]
    if not positive:
        return ()
    smallest = min(positive)
    ks = [2**i for i in range(smallest.bit_length()) if 2**i <= smallest]
    return tuple(ks if ks[-1] == smallest else [*ks, smallest])


def problem_scores(
    rows: Iterable[ResultRow], problems: Iterable[Problem] = ()
) -> list[ProblemScore]:
    """One score per problem named by a row or in `problems`, sorted by id."""
    attempts: dict[str, int] = {}
    verdicts: dict[str, dict[Verdict, int]] = {}
    category = {p.id: p.category for p in problems}
    for row in rows:
        category.setdefault(row.problem_id, row.category)
        attempts[row.problem_id] = attempts.get(row.problem_id, 0) + 1
        counts = verdicts.setdefault(row.problem_id, {})
        if row.verdict is not None:
            counts[row.verdict] = counts.get(row.verdict, 0) + 1
    return [
        ProblemScore(pid, category[pid], attempts.get(pid, 0), verdicts.get(pid, {}))
        for pid in sorted(category)
    ]


def mean_pass_at_k(scores: Sequence[ProblemScore], k: int) -> float | None:
    """pass@k averaged over all the problems, 0 for one with no checked attempt; None for
    no problems."""
    values = [pass_at_k(s.n, s.c, k) if s.n > 0 else 0.0 for s in scores]
    return sum(values) / len(values) if values else None


def pass_at_1(scores: Sequence[ProblemScore]) -> Estimate | None:
    """Avg-of-n pass@1 and the standard error of that mean over problems (see the module);
    a problem with no checked attempt has rate 0. None for no problems."""
    rates = [s.c / s.n if s.n > 0 else 0.0 for s in scores]
    if not rates:
        return None
    mean = sum(rates) / len(rates)
    if len(rates) < 2:
        return Estimate(mean, None, 1)
    variance = sum((r - mean) ** 2 for r in rates) / (len(rates) - 1)
    return Estimate(mean, math.sqrt(variance / len(rates)), len(rates))


def breakdown(scores: Sequence[ProblemScore], ks: Sequence[int]) -> Breakdown:
    """The figures of `scores`; pass@1 None when the run checked nothing (no `ks`)."""
    verdicts = {v: sum(s.verdicts.get(v, 0) for s in scores) for v in Verdict}
    at_k = {k: mean_pass_at_k(scores, k) for k in ks}
    return Breakdown(
        problems=len(scores),
        evaluated=sum(s.n > 0 for s in scores),
        attempts=sum(s.attempts for s in scores),
        unattempted=sum(s.attempts == 0 for s in scores),
        verdicts=verdicts,
        pass_at_k={k: value for k, value in at_k.items() if value is not None},
        pass_at_1=pass_at_1(scores) if ks else None,
    )


def generation_stats(generations: Sequence[Generation]) -> GenerationStats | None:
    if not generations:
        return None
    count = len(generations)
    prompt = sum(g.prompt_tokens for g in generations)
    completion = sum(g.completion_tokens for g in generations)
    return GenerationStats(
        completions=count,
        models=tuple(sorted({g.model for g in generations if g.model})),
        mean_prompt_tokens=prompt / count,
        mean_completion_tokens=completion / count,
        mean_seconds=sum(g.seconds for g in generations) / count,
        total_tokens=prompt + completion,
    )


def compute(
    rows: Iterable[ResultRow],
    problems: Iterable[Problem] = (),
    generations: Sequence[Generation] = (),
) -> RunMetrics:
    """All the numbers of one run; categories use the run's k so their columns line up."""
    scores = problem_scores(rows, problems)
    ks = report_ks(s.n for s in scores)
    by_category: dict[str, list[ProblemScore]] = {}
    for score in scores:
        by_category.setdefault(score.category, []).append(score)
    return RunMetrics(
        ks=ks,
        overall=breakdown(scores, ks),
        categories={name: breakdown(by_category[name], ks) for name in sorted(by_category)},
        unevaluated=tuple(s.problem_id for s in scores if s.n == 0),
        generation=generation_stats(generations),
        scores=tuple(scores),
    )
