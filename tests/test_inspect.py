"""proofeval inside inspect_ai: real `eval()` runs of the embedded demo with inspect's
`mockllm` model provider (no network; its outputs scripted here), checked by the real HOL
Light and Coq; the log inspect writes holds proofeval's verdicts. An agent proves one HOL
Light and one Coq goal with the proof-state tools, the model's tool calls scripted; an
agent's checks are bounded and its calls logged, as MCP's are."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

inspect_ai = pytest.importorskip("inspect_ai")  # the `inspect` extra; `make install` has it

from inspect_ai import Task  # noqa: E402
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.dataset import MemoryDataset  # noqa: E402
from inspect_ai.log import EvalLog, read_eval_log  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessage,
    ChatMessageTool,
    ModelOutput,
    ModelUsage,
    get_model,
)

from proofeval.generate.prompts import render  # noqa: E402
from proofeval.integrations.inspect_scorer import proof_checker  # noqa: E402
from proofeval.integrations.inspect_tasks import (  # noqa: E402
    demo,
    demo_problems,
    minif2f_hol_light,
    minif2f_rocq,
    s2n_bignum,
    samples,
)
from proofeval.integrations.inspect_tools import prove_with_tools  # noqa: E402
from proofeval.integrations.verifier import use  # noqa: E402
from proofeval.loaders import Selection, load_benchmark  # noqa: E402
from proofeval.provers.hol_light.server import WarmProcess  # noqa: E402
from proofeval.provers.interface import CheckSettings  # noqa: E402
from proofeval.scale.api import Checker  # noqa: E402
from tests.conftest import shared_data  # noqa: E402

MODEL = "mockllm/model"
# Each problem's statement (as its prompt shows it) and the answers the model gives it,
# one per epoch; epochs run concurrently, so which epoch gets which answer varies.
ANSWERS = {
    "`!m n. m + n = n + m`": ["```ocaml\nARITH_TAC\n```", "```ocaml\nREWRITE_TAC[]\n```"],
    "`!n. ~(n < n)`": ["```ocaml\nCHEAT_TAC\n```", "I cannot prove this."],
    "Theorem impl_refl : forall P : Prop, P -> P.": [
        "```coq\nintros P H. exact H.\n```",
        "```coq\nintros P H. exact H.\n```",
    ],
}
EXPECTED = {
    "arithmetic.add_comm": Counter({"OK": 1, "FAIL": 1}),
    "arithmetic.lt_irrefl": Counter({"CHEATING": 1, "ERROR": 1}),
    "coq-logic.impl_refl": Counter({"OK": 2}),
}


@pytest.fixture(scope="module")
def checker(hol_base: WarmProcess) -> Iterator[Checker]:
    """One Checker for the module, installed as the integrations' default verifier."""
    with Checker(CheckSettings(workers=2), warm={"hol-light": hol_base}) as made, use(made):
        yield made


def with_usage(output: ModelOutput) -> ModelOutput:
    """`output` with its token usage given: mockllm would otherwise count tokens with
    tiktoken, whose encoding it downloads (these tests run without a network)."""
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def scripted(answers: dict[str, list[str]]) -> Callable[..., ModelOutput]:
    """mockllm's custom_outputs: each problem's next answer, found by its statement."""
    left = {statement: list(given) for statement, given in answers.items()}

    def output(messages: list[ChatMessage], *_args: object) -> ModelOutput:
        prompt = messages[0].text
        [statement] = [s for s in left if s in prompt]
        return with_usage(ModelOutput.from_content(MODEL, left[statement].pop()))

    return output


def run(task: object, outputs: Callable[..., ModelOutput], log_dir: Path) -> EvalLog:
    model = get_model(MODEL, custom_outputs=outputs)
    [log] = inspect_eval(task, model=model, log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    return read_eval_log(log.location)  # the file inspect wrote, read back


@pytest.mark.hol
@pytest.mark.coq
def test_an_eval_of_the_demo_logs_proofevals_verdicts(checker: Checker, tmp_path: Path) -> None:
    only = ",".join(EXPECTED)
    log = run(demo(only=only, epochs=2), scripted(ANSWERS), tmp_path)
    assert Path(log.location).parent == tmp_path
    found: dict[str, Counter] = {pid: Counter() for pid in EXPECTED}
    for sample in log.samples or []:
        score = sample.scores["proof_checker"]
        meta = score.metadata or {}
        assert meta["problem_id"] == sample.id
        assert {"verdict", "stage", "seconds", "message"} <= set(meta)
        assert score.value == ("C" if meta["verdict"] == "OK" else "I")
        found[str(sample.id)][meta["verdict"]] += 1
    assert found == EXPECTED
    stages = {(s.id, s.scores["proof_checker"].metadata["verdict"]):
              s.scores["proof_checker"].metadata["stage"] for s in log.samples or []}  # fmt: skip
    assert stages[("arithmetic.lt_irrefl", "ERROR")] == "precheck"  # prose is no tactic
    assert stages[("arithmetic.add_comm", "FAIL")] == "check"
    metrics = {(s.name, s.reducer): s.metrics for s in log.results.scores}
    assert metrics[("proof_checker", "mean")]["accuracy"].value == pytest.approx(0.5)
    # proofeval's pass@k: add_comm 1 of 2 (pass@1 0.5, pass@2 1), lt_irrefl 0, impl_refl 1.
    assert metrics[("proof_checker", "proofeval/pass_at_1")]["accuracy"].value == pytest.approx(0.5)
    assert metrics[("proof_checker", "proofeval/pass_at_2")]["accuracy"].value == pytest.approx(
        2 / 3
    )
    reduced = {r.reducer: {s.sample_id: s for s in r.samples} for r in log.reductions or []}
    add_comm = reduced["proofeval/pass_at_2"]["arithmetic.add_comm"]
    assert add_comm.metadata == {"n": 2, "c": 1, "verdicts": {"FAIL": 1, "OK": 1}}


def tool_results(messages: list[ChatMessage]) -> list[dict]:
    return [json.loads(m.text) if m.error is None else {"refused": m.error.message}
            for m in messages if isinstance(m, ChatMessageTool)]  # fmt: skip


# An agent's steps per problem: (tool, arguments from the previous result) in order.
HOL_STEPS = [
    ("start_state", lambda last: {}),
    ("apply_tactic", lambda last: {"state_id": last["id"], "tactic": "NO_SUCH_TAC"}),
    ("apply_tactic", lambda last: {"state_id": last["error"]["state"],
                                   "tactic": "INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES]"}),
    ("goals", lambda last: {"state_id": last["id"]}),
    ("submit", lambda last: {"state_id": last["id"]}),
    ("submit", lambda last: {"proof": "ARITH_TAC"}),
]  # fmt: skip
COQ_STEPS = [
    ("start_state", lambda last: {}),
    ("search_theorems", lambda last: {"pattern": "(_ + _ = _ + _)", "limit": 5}),
    ("apply_tactic", lambda last: {"state_id": "unknown", "tactic": "intros."}),
    ("start_state", lambda last: {}),
    ("apply_tactic", lambda last: {"state_id": last["id"], "tactic": "intros."}),
    ("apply_tactic", lambda last: {"state_id": last["id"], "tactic": "lia."}),
    ("submit", lambda last: {"state_id": last["id"]}),
]


def agent(messages: list[ChatMessage], *_args: object) -> ModelOutput:
    """A scripted agent: its next step depends on the problem and on the tools' replies."""
    steps = HOL_STEPS if "`!n. n + 0 = n`" in messages[1].text else COQ_STEPS
    done = tool_results(messages)
    if len(done) == len(steps):
        return with_usage(ModelOutput.from_content(MODEL, "Submitted."))
    name, arguments = steps[len(done)]
    return with_usage(ModelOutput.for_tool_call(MODEL, name, arguments(done[-1] if done else {})))


@pytest.mark.hol
@pytest.mark.coq
def test_an_agent_proves_with_the_state_tools(checker: Checker, tmp_path: Path) -> None:
    log = run(demo(only="arithmetic.add_0,coq-arithmetic.add_comm", agent=True), agent, tmp_path)
    samples = {s.id: s for s in log.samples or []}
    hol, coq = samples["arithmetic.add_0"], samples["coq-arithmetic.add_comm"]
    for sample in (hol, coq):
        score = sample.scores["proof_checker"]
        assert (score.value, score.metadata["verdict"]) == ("C", "OK"), score.explanation
    assert hol.scores["proof_checker"].answer == "(INDUCT_TAC THEN ASM_REWRITE_TAC[ADD_CLAUSES])"
    assert coq.scores["proof_checker"].answer.split() == ["intros.", "lia."]
    hol_results = tool_results(hol.messages)
    assert hol_results[1]["error"]["verdict"] in {"FAIL", "ERROR"}  # the prover refused it
    assert hol_results[3]["solved"] is True
    assert hol_results[4]["verdict"] == "OK"
    assert "already submitted" in hol_results[5]["refused"]  # one submit counts
    coq_results = tool_results(coq.messages)
    assert coq_results[1]["theorems"]  # Search found add_comm's kin in the context
    assert "refused" in coq_results[2]  # a state this session never made


def test_inspect_finds_the_tasks_by_name() -> None:
    """`inspect eval proofeval/<task>` resolves through the entry point, in a process
    that has not imported proofeval's integrations; no prover is reached."""
    code = """
from importlib import resources
from inspect_ai import eval
demo = str(resources.files("proofeval") / "demo" / "problems.jsonl")
for name, args in [("proofeval/demo", {"only": "no_such_problem"}),
                   ("proofeval/minif2f_rocq", {"path": demo})]:
    try:
        eval(name, task_args=args, model="mockllm/model", display="none")
    except Exception as exc:
        print(type(exc).__name__, exc)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("InputError --only: 'no_such_problem' matches no problem")
    assert lines[1].endswith("its problems are for coq, hol-light, not coq")


def test_the_benchmark_tasks_read_through_proofevals_loaders(tmp_path: Path) -> None:
    """Each named task's samples are its loader's problems with proofeval's prompts, the
    reference proof left out; epochs=4 reduces to inspect's mean and pass@1, 2, 4."""
    for make, data in [(minif2f_hol_light, "minif2f-hollight"), (minif2f_rocq, "minif2f-rocq")]:
        path = shared_data(data)
        task = make(path=str(path), limit=2, epochs=4)
        problems = load_benchmark(path, Selection(limit=2)).problems
        assert [s.id for s in task.dataset] == [p.id for p in problems]
        assert [s.input for s in task.dataset] == [render(None, p) for p in problems]
        assert all("reference" not in s.metadata["problem"] for s in task.dataset)
        assert task.epochs == 4 and len(task.epochs_reducer) == 4
    case = tmp_path / "bench" / "word_add_comm"
    case.mkdir(parents=True)
    (case / "setup.ml").write_text("")
    (case / "query.txt").write_text("`!x y:int64. word_add x y = word_add y x`")
    template = shared_data("s2n-bignum-bench", "prompt-basic.txt")
    task = s2n_bignum(path=str(tmp_path / "bench"), template=str(template))
    [sample] = task.dataset
    assert sample.input.startswith("You are an expert in HOL Light.")  # the benchmark's own
    assert "`!x y:int64. word_add x y = word_add y x`" in sample.input
    assert "{query.txt}" not in sample.input


BUDGET_STEPS = [
    ("check", lambda last: {"proof": "intros P H. reflexivity."}),
    ("check", lambda last: {"proof": "intros P H. exact H."}),
    ("submit", lambda last: {"proof": "intros P H. exact H."}),
]


def budgeted(messages: list[ChatMessage], *_args: object) -> ModelOutput:
    done = tool_results(messages)
    if len(done) == len(BUDGET_STEPS):
        return with_usage(ModelOutput.from_content(MODEL, "Out of checks."))
    name, arguments = BUDGET_STEPS[len(done)]
    return with_usage(ModelOutput.for_tool_call(MODEL, name, arguments({})))


@pytest.mark.coq
def test_an_agents_checks_are_bounded_and_logged(tmp_path: Path) -> None:
    """One check allowed: the second check and the submit are refused (tool errors the
    model sees), nothing is submitted, and every call is in the run's call log."""
    problems = load_benchmark(demo_problems(), Selection(only=("coq-logic.impl_refl",)))
    task = Task(dataset=MemoryDataset(samples(problems.problems)), scorer=proof_checker(),
                solver=prove_with_tools(max_checks=1, out=str(tmp_path / "run")))  # fmt: skip
    with Checker(CheckSettings(workers=1)) as coq_only, use(coq_only):
        log = run(task, budgeted, tmp_path / "logs")
    [sample] = log.samples or []
    results = tool_results(sample.messages)
    assert results[0]["verdict"] == "FAIL"
    assert "budget of 1 checks is spent" in results[1]["refused"]
    assert "budget of 1 checks is spent" in results[2]["refused"]
    score = sample.scores["proof_checker"]
    assert (score.value, score.metadata["verdict"]) == ("I", "FAIL")
    assert score.explanation == "no proof submitted"
    calls = [json.loads(line) for line in (tmp_path / "run" / "mcp-calls.jsonl").open()]
    assert [c["tool"] for c in calls] == ["check", "check", "submit"]
    assert "error" in calls[1]["result"] and "error" in calls[2]["result"]
