"""proofeval's reward functions called exactly as the RL libraries call them, on real
attempts checked by the real HOL Light and Coq.

TRL and verl are not installed here: both pull in torch (TRL through accelerate; verl
also Ray, tensordict, vLLM), too heavy for CI. So each test makes the library's own call,
keyword for keyword, as read in its source:
- TRL 1.16.0, trl/trainer/grpo_trainer.py, GRPOTrainer._calculate_rewards (lines
  1584-1627): the dataset's columns other than prompt/completion/completion_ids become
  keyword lists, one item per completion, plus `reward_kwargs["trainer_state"] =
  self.state`; then `reward_func(prompts=prompts, completions=completions,
  completion_ids=completion_ids_list, **reward_kwargs)`, the completions being strings
  (standard format) or lists of messages (conversational).
- verl 0.9.1, verl/experimental/reward_loop/reward_manager/naive.py: `compute_score(
  data_source=data_source, solution_str=response_str, ground_truth=ground_truth,
  extra_info=extra_info)` run in the event loop's thread pool (`run_in_executor`),
  ground_truth from the row's reward_model.ground_truth, extra_info a dict verl adds
  num_turns and rollout_reward_scores to; verl/trainer/ppo/reward.py binds
  custom_reward_function.reward_kwargs as keywords (`_call_with_kwargs`). The legacy
  verl/workers/reward_manager/naive.py makes the same call, in the caller's thread."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest

from proofeval.api import Checker, problem
from proofeval.client import CheckClient
from proofeval.errors import InputError
from proofeval.integrations.rewards import (
    ProofReward,
    Shaping,
    compute_score,
    reward_funcs,
    rewards,
)
from proofeval.integrations.verifier import problem_fields, use
from proofeval.model import Verdict
from proofeval.provers.hol_light.server import WarmProcess
from proofeval.provers.interface import CheckSettings
from tests.test_serve import TOKEN, serving

ADD_COMM = problem("hol-light", "`!m n. m + n = n + m`")
IMPL = problem("coq", "Theorem impl_refl : forall P : Prop, P -> P.")
# A completion per row and the verdict the checker gives it.
ROWS = [
    (ADD_COMM, "By arithmetic:\n```ocaml\nARITH_TAC\n```", Verdict.OK),
    (ADD_COMM, "```ocaml\nCHEAT_TAC\n```", Verdict.CHEATING),
    (IMPL, "```coq\nintros P H. exact H.\n```", Verdict.OK),
    (IMPL, "```coq\nintros P H. reflexivity.\n```", Verdict.FAIL),
]
SHAPED = [1.0, -1.0, 1.0, 0.0]  # OK 1, CHEATING -1 (made negative), FAIL 0


@pytest.fixture(scope="module")
def checker(hol_base: WarmProcess) -> Iterator[Checker]:
    with Checker(CheckSettings(workers=2), warm={"hol-light": hol_base}) as made:
        yield made


def trl_columns() -> dict[str, list]:
    """The dataset's columns as TRL passes them: one item per completion."""
    return {
        "prover": [p.prover for p, _, _ in ROWS],
        "statement": [p.statement for p, _, _ in ROWS],
        "header": [p.header for p, _, _ in ROWS],
        "trainer_state": object(),  # TRL's TrainerState: not a column
    }


@pytest.mark.hol
@pytest.mark.coq
def test_trl_standard_and_conversational_completions(checker: Checker) -> None:
    reward_func = reward_funcs(backend=checker, shaping=Shaping(cheating=-1.0))
    assert reward_func.__name__ == "proofeval_reward"
    prompts = ["Prove it."] * len(ROWS)
    completions = [c for _, c, _ in ROWS]
    ids = [[1, 2, 3]] * len(ROWS)
    got = reward_func(prompts=prompts, completions=completions, completion_ids=ids,
                      **trl_columns())  # fmt: skip
    assert got == SHAPED
    assert [o.verdict for o in reward_func.reward.last] == [v for _, _, v in ROWS]
    chats = [[{"role": "assistant", "content": c}] for c in completions]
    chat_prompts = [[{"role": "user", "content": p}] for p in prompts]
    got = reward_func(prompts=chat_prompts, completions=chats, completion_ids=ids,
                      **trl_columns())  # fmt: skip
    assert got == SHAPED


@pytest.mark.hol
@pytest.mark.coq
def test_trl_rows_that_name_a_benchmark_problem(checker: Checker) -> None:
    named = [ADD_COMM, IMPL]
    reward = ProofReward(checker, problems=named)
    got = reward.trl(prompts=["p", "p"], completions=["```ocaml\nARITH_TAC\n```",
                     "```coq\nintros P H. exact H.\n```"], problem_id=[p.id for p in named],
                     trainer_state=object())  # fmt: skip
    assert got == [1.0, 1.0]
    with pytest.raises(InputError, match="no problem 'nope'"):
        reward.trl(prompts=["p"], completions=["x"], problem_id=["nope"])


@pytest.mark.hol
@pytest.mark.coq
def test_verl_compute_score_as_the_reward_managers_call_it(checker: Checker) -> None:
    # custom_reward_function.reward_kwargs are bound as keywords before verl calls it.
    score = partial(compute_score, cheating=-1.0, timeout=30.0)

    def call(i: int) -> float:
        p, output, _ = ROWS[i]
        truth = json.dumps(problem_fields(p)) if i % 2 else problem_fields(p)
        extra = {"index": i, "num_turns": 2, "rollout_reward_scores": {}}
        return score(data_source="proofeval/demo", solution_str=output, ground_truth=truth,
                     extra_info=extra)  # fmt: skip

    with use(checker):  # the process's verifier, as in a verl worker
        assert [call(i) for i in range(len(ROWS))] == SHAPED  # the legacy manager's loop
        with ThreadPoolExecutor(4) as pool:  # verl 0.9's run_in_executor, rows at once
            assert list(pool.map(call, range(len(ROWS)))) == SHAPED


@pytest.mark.hol
@pytest.mark.coq
def test_the_batch_function_and_a_timeout_per_call(checker: Checker) -> None:
    spin = "(let rec spin (g : goal) : goalstate = spin g in spin)"
    outputs = ["```ocaml\nARITH_TAC\n```", f"```ocaml\n{spin}\n```"]
    started = time.monotonic()
    got = rewards([ADD_COMM, ADD_COMM], outputs, backend=checker, timeout=3.0)
    assert got == [1.0, 0.0]
    assert time.monotonic() - started < 60  # the spin was stopped at its 3 s, not at 60
    reward = ProofReward(checker, timeout=3.0)
    reward.rewards([ADD_COMM], outputs[1:])
    assert [o.verdict for o in reward.last] == [Verdict.TIMEOUT]


@pytest.mark.hol
@pytest.mark.coq
@pytest.mark.service
def test_rewards_through_the_service(hol_base: WarmProcess) -> None:
    with serving(hol_base) as service, CheckClient(service.url, TOKEN) as client:
        reward = ProofReward(client, shaping=Shaping(cheating=-1.0))
        assert reward.rewards([p for p, _, _ in ROWS], [c for _, c, _ in ROWS]) == SHAPED


def test_what_names_no_problem_is_refused() -> None:
    with Checker() as idle:  # nothing here reaches a prover
        refusals(ProofReward(idle))


def refusals(reward: ProofReward) -> None:
    with pytest.raises(InputError, match="'statement' column is missing"):
        reward.trl(prompts=["p"], completions=["x"], prover=["coq"])
    with pytest.raises(InputError, match="neither text nor chat"):
        reward.trl(prompts=["p"], completions=[42], prover=["coq"], statement=["s"])
    with pytest.raises(InputError, match="ground_truth"):
        reward.verl("d", "x", "not json")
    with pytest.raises(InputError, match="2 problems but 1 outputs"):
        reward.rewards([IMPL, IMPL], ["x"])
