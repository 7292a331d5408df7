"""Reward functions for RL trainers, in their documented signatures, backed by the
ordinary checker (a local Checker or a `proofeval serve` service):

- TRL (GRPOTrainer, RLOOTrainer): `reward_func(prompts, completions, **kwargs)`, one
  float per completion; completions are strings or chat message lists, and the dataset's
  columns come as keyword lists: `prover`, `statement`, `header` (optionally `timeout`),
  or `problem_id` when the reward was given the benchmark's problems.
- verl (custom_reward_function): `compute_score(data_source, solution_str, ground_truth,
  extra_info=None)`, ground_truth being the problem: a dict or JSON object of `prover`,
  `statement`, `header`, `timeout`.
- any other: `rewards(problems, outputs)`.

OK earns `ok` (1.0), CHEATING `cheating` (0.0 unless made negative), any other verdict
`other` (0.0). `timeout`: seconds per attempt for problems that name none."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from proofeval.checking.checker import LocalChecker, problem
from proofeval.errors import InputError
from proofeval.integrations.verifier import Verifier, default_verifier
from proofeval.model import Outcome, Problem, Verdict
from proofeval.scale.client import CheckClient


@dataclass(frozen=True)
class Shaping:
    """The reward of each verdict."""

    ok: float = 1.0
    cheating: float = 0.0
    other: float = 0.0

    def reward(self, outcome: Outcome) -> float:
        if outcome.verdict is Verdict.OK:
            return self.ok
        return self.cheating if outcome.verdict is Verdict.CHEATING else self.other


class ProofReward:
    """Rewards from verdicts. `backend`: a Checker or a CheckClient (None: the process's
    default, see verifier.default_verifier); `problems`: the benchmark's, for rows that
    name a `problem_id`."""

    def __init__(
        self,
        backend: LocalChecker | CheckClient | None = None,
        *,
        shaping: Shaping = Shaping(),
        timeout: float | None = None,
        problems: Sequence[Problem] = (),
    ) -> None:
        self._verifier = Verifier(backend) if backend is not None else None
        self.shaping = shaping
        self.timeout = timeout
        self.problems = {p.id: p for p in problems}
        self.last: list[Outcome] = []  # the outcomes behind the latest rewards

    @property
    def verifier(self) -> Verifier:
        return self._verifier or default_verifier()

    def rewards(self, problems: Sequence[Problem], outputs: Sequence[str]) -> list[float]:
        """One reward per (problem, raw model output), in order."""
        if len(problems) != len(outputs):
            raise InputError(f"{len(problems)} problems but {len(outputs)} outputs")
        self.last = self.verifier.check(list(zip(problems, outputs, strict=True)), self.timeout)
        return [self.shaping.reward(o) for o in self.last]

    def trl(self, prompts: list, completions: list, **kwargs: Any) -> list[float]:
        """TRL's reward function (pass `reward.trl` in `reward_funcs`)."""
        del prompts  # the problem comes from the dataset's columns, not the prompt's text
        rows = [_row(kwargs, i) for i in range(len(completions))]
        problems = [self._problem(row) for row in rows]
        return self.rewards(problems, [_text(c) for c in completions])

    def verl(
        self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
        **kwargs: Any,
    ) -> float:  # fmt: skip
        """verl's compute_score."""
        del data_source, extra_info, kwargs
        [reward] = self.rewards([self._problem(_fields(ground_truth))], [solution_str])
        return reward

    def _problem(self, row: Mapping[str, Any]) -> Problem:
        pid = row.get("problem_id")
        if pid is not None and self.problems:
            found = self.problems.get(str(pid))
            if found is None:
                raise InputError(f"no problem {pid!r} among the reward's problems")
            return found
        try:
            return problem(row["prover"], row["statement"], row.get("header") or "",
                           row.get("timeout") or None)  # fmt: skip
        except KeyError as exc:
            raise InputError(f"a row names no problem: its {exc} column is missing") from None


def _row(columns: Mapping[str, Any], i: int) -> dict:
    """Row i of TRL's keyword columns (lists, one item per completion); what is not a list
    (TRL's trainer_state) is not a column."""
    return {k: v[i] for k, v in columns.items() if isinstance(v, (list, tuple))}


def _text(completion: Any) -> str:
    """A completion's text: a string (TRL's standard format), or the content of the last
    assistant message of a conversation (its conversational format)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        said = [m for m in completion if isinstance(m, Mapping) and m.get("role", "assistant")
                == "assistant"]  # fmt: skip
        if said and isinstance(said[-1].get("content"), str):
            return said[-1]["content"]
    raise InputError(f"a completion is neither text nor chat messages: {type(completion)}")


def _fields(ground_truth: Any) -> Mapping[str, Any]:
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError:
            raise InputError("ground_truth is not a JSON object of the problem") from None
    if not isinstance(ground_truth, Mapping):
        raise InputError("ground_truth: a problem's prover, statement and header")
    return ground_truth


def reward_funcs(**options: Any) -> Any:
    """A TRL reward function named `proofeval_reward` (TRL logs rewards by name)."""
    reward = ProofReward(**options)

    def proofeval_reward(prompts: list, completions: list, **kwargs: Any) -> list[float]:
        return reward.trl(prompts, completions, **kwargs)

    proofeval_reward.reward = reward  # type: ignore[attr-defined]
    return proofeval_reward


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
    cheating: float = 0.0, timeout: float | None = None, **kwargs: Any,
) -> float:  # fmt: skip
    """verl's compute_score on the process's default verifier: name this module's file
    and `compute_score` in verl's custom_reward_function (its reward_kwargs may set
    `cheating` and `timeout`)."""
    reward = ProofReward(shaping=Shaping(cheating=cheating), timeout=timeout)
    return reward.verl(data_source, solution_str, ground_truth, extra_info, **kwargs)


def rewards(problems: Sequence[Problem], outputs: Sequence[str], **options: Any) -> list[float]:
    """The plain batch function: one reward per (problem, raw output)."""
    return ProofReward(**options).rewards(problems, outputs)
