"""Reading what users bring: benchmarks, answer files, timeout files, answers' proofs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from proofeval.errors import InputError
from proofeval.generate.extract import extract_proof
from proofeval.loaders import load_benchmark
from proofeval.loaders.answers import number_attempts, read_answers, unknown_summary
from proofeval.model import Attempt, Problem
from proofeval.timeouts import TimeoutPolicy, load_policy
from tests.conftest import shared_data

# A real proof from HOL Light's Library/binary.ml: it holds backtick term quotations.
TACTIC = (
    "REPEAT STRIP_TAC THEN MATCH_MP_TAC FINITE_SUBSET THEN EXISTS_TAC `0..n` THEN\n"
    "ASM_SIMP_TAC[SUBSET; IN_NUMSEG; FINITE_NUMSEG; LE_0]"
)
GOAL = "`!s. (!x:num. x IN s ==> x <= n) ==> FINITE s`"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def jsonl(path: Path, *rows: object) -> Path:
    return write(path, "".join(json.dumps(row) + "\n" for row in rows))


def error(call, *args) -> str:
    with pytest.raises(InputError) as caught:
        call(*args)
    return str(caught.value)


# --- extract_proof -------------------------------------------------------------------------


def test_extract_without_fence_is_the_whole_text_stripped():
    assert extract_proof(f"\n  {TACTIC}  \n\n") == TACTIC


def test_extract_takes_a_fenced_block_with_language_tag():
    answer = f"Here is the proof:\n```ocaml\n{TACTIC}\n```\nIt uses FINITE_SUBSET."
    assert extract_proof(answer) == TACTIC


def test_extract_takes_the_last_complete_block():
    answer = f"First try:\n```\nARITH_TAC\n```\nBetter:\n~~~hol\n{TACTIC}\n~~~\nDone."
    assert extract_proof(answer) == TACTIC


def test_extract_takes_an_unterminated_trailing_fence():
    assert extract_proof(f"The proof:\n```ocaml\n{TACTIC}\n") == TACTIC


def test_extract_prefers_a_complete_block_to_a_stray_trailing_fence():
    assert extract_proof(f"```\n{TACTIC}\n```\n```") == TACTIC


def test_extract_keeps_other_fences_inside_a_block():
    answer = "````markdown\n```\nARITH_TAC\n```\n````"
    assert extract_proof(answer) == "```\nARITH_TAC\n```"
    assert extract_proof("~~~\n```\nARITH_TAC\n~~~") == "```\nARITH_TAC"


def test_extract_closing_fence_must_be_at_least_as_long():
    assert extract_proof("````\nA\n```\nB\n````") == "A\n```\nB"


def test_extract_ignores_inline_triple_backticks():
    assert extract_proof("Use ```ARITH_TAC``` here.") == "Use ```ARITH_TAC``` here."
    assert extract_proof("```ARITH_TAC```") == "```ARITH_TAC```"


def test_extract_empty_block_gives_empty_proof():
    assert extract_proof("```\n```") == ""


# --- s2n-bignum-bench layout ---------------------------------------------------------------


def s2n_problem(root: Path, pid: str, query: str = GOAL, **files: str) -> Path:
    write(root / pid / "setup.ml", files.pop("setup", 'needs "Library/words.ml";;\n'))
    write(root / pid / "query.txt", query + "\n")
    for name, text in files.items():
        write(root / pid / f"{name}.txt", text)
    return root / pid


def test_s2n_layout_reads_problems_sorted_with_answers(tmp_path: Path):
    root = tmp_path / "bench"
    s2n_problem(root, "x86.b", category="bit_vector\n", answer=f"```\n{TACTIC}\n```\n")
    s2n_problem(root, "arm.a", setup="let x = 1;;\n")
    write(root / "__pycache__" / "junk.pyc", b"\x00\xff")
    for name in ("problems.json", "timeout-map.json", "timeouts.json"):
        write(root / name, "{}")

    bench = load_benchmark(root)

    assert bench.name == "bench" and bench.source == root
    assert [p.id for p in bench.problems] == ["arm.a", "x86.b"]
    a, b = bench.problems
    assert a == Problem(
        id="arm.a",
        statement=GOAL,
        prover="hol-light",
        benchmark="bench",
        category="uncategorized",
        header="let x = 1;;\n",
        directory=str((root / "arm.a").absolute()),
    )
    assert b.category == "bit_vector"
    assert bench.answers == [Attempt("x86.b", 0, f"```\n{TACTIC}\n```\n", TACTIC)]


def test_s2n_layout_missing_query(tmp_path: Path):
    write(tmp_path / "p1" / "setup.ml", "")
    message = error(load_benchmark, tmp_path)
    assert "problem p1 has no query.txt" in message and str(tmp_path / "p1") in message


def test_s2n_layout_missing_setup(tmp_path: Path):
    write(tmp_path / "p1" / "query.txt", GOAL)
    message = error(load_benchmark, tmp_path)
    assert "problem p1 has no setup.ml" in message and str(tmp_path / "p1") in message


def test_s2n_layout_empty_query(tmp_path: Path):
    s2n_problem(tmp_path, "p1", query="  ")
    assert str(tmp_path / "p1" / "query.txt") in error(load_benchmark, tmp_path)


def test_s2n_layout_multi_line_category(tmp_path: Path):
    s2n_problem(tmp_path, "p1", category="generic\nbit_vector\n")
    assert str(tmp_path / "p1" / "category.txt") in error(load_benchmark, tmp_path)


def test_s2n_layout_without_problems(tmp_path: Path):
    write(tmp_path / "problems.json", "{}")
    (tmp_path / "empty").mkdir()
    message = error(load_benchmark, tmp_path)
    assert str(tmp_path) in message and "no problems" in message


def test_s2n_layout_non_utf8_file(tmp_path: Path):
    s2n_problem(tmp_path, "p1", setup="(* ok *)\n")
    write(tmp_path / "p1" / "setup.ml", b"let x = 1;;\n(* caf\xe9 *)\n")
    assert error(load_benchmark, tmp_path) == f"{tmp_path / 'p1' / 'setup.ml'}:2: not UTF-8 text"


def test_missing_benchmark_path(tmp_path: Path):
    missing = tmp_path / "nope"
    assert error(load_benchmark, missing) == f"no such file or directory: {missing}"


def test_benchmark_of_unknown_kind(tmp_path: Path):
    path = write(tmp_path / "problems.csv", "id\n")
    assert str(path) in error(load_benchmark, path)


# --- native JSONL problems -----------------------------------------------------------------


def test_native_jsonl_reads_fields_defaults_and_order(tmp_path: Path):
    path = jsonl(
        tmp_path / "mine.jsonl",
        {"id": "zeta", "statement": GOAL, "extra": [1]},
        {
            "id": "alpha",
            "prover": "lean4",
            "category": "algebra",
            "header": "import Mathlib",
            "statement": "theorem t : 1 = 1",
            "timeout": 7,
            "reference": "rfl",
            "directory": "ctx",
        },
    )
    write(path, path.read_text() + "\n   \n")

    bench = load_benchmark(path)

    assert bench.name == "mine" and bench.answers == [] and bench.source == path
    zeta, alpha = bench.problems
    assert zeta == Problem(id="zeta", statement=GOAL, benchmark="mine")
    assert alpha == Problem(
        id="alpha",
        statement="theorem t : 1 = 1",
        prover="lean4",
        benchmark="mine",
        category="algebra",
        header="import Mathlib",
        directory=str((tmp_path / "ctx").absolute()),
        timeout=7.0,
        reference="rfl",
    )


def test_native_jsonl_reads_nemo_skills_rows(tmp_path: Path):
    """A miniF2F row as NeMo-Skills ships it: name, header, formal_statement (Lean 4)."""
    statement = "theorem mathd_algebra_10 : abs ((120 : ℝ) / 100 * 30 - 130 / 100 * 20) = 10 := by"
    row = {"name": "mathd_algebra_10", "split": "test", "informal_prefix": "/-- -/\n"}
    row |= {"header": "import Mathlib\n", "formal_statement": statement + "\n"}
    [problem] = load_benchmark(jsonl(tmp_path / "minif2f.jsonl", row)).problems
    assert (problem.id, problem.statement, problem.header, problem.prover) == (
        "mathd_algebra_10",
        statement,
        "import Mathlib\n",
        "lean4",
    )
    row = {"name": "c", "formal_statement": "Lemma c : True.", "prover": "coq"}
    assert load_benchmark(jsonl(tmp_path / "c.jsonl", row)).problems[0].prover == "coq"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "a", "statement": ', "malformed JSON"),
        ('["a", "b"]', "expected a JSON object"),
        ('{"statement": "`T`"}', "missing id"),
        ('{"id": "a"}', "missing statement"),
        ('{"id": "a", "statement": "  "}', "missing statement"),
        ('{"id": 3, "statement": "`T`"}', "id must be a string"),
        ('{"id": "a", "statement": "`T`", "header": ["x"]}', "header must be a string"),
        ('{"id": "a", "statement": "`T`", "timeout": "60"}', "timeout must be a positive"),
        ('{"id": "a", "statement": "`T`", "timeout": true}', "timeout must be a positive"),
        ('{"id": "a", "statement": "`T`", "timeout": -1}', "timeout must be a positive"),
        ('{"id": "first", "statement": "`T`"}', "duplicate id 'first' (first on line 1)"),
    ],
)
def test_native_jsonl_errors_name_file_and_line(tmp_path: Path, line: str, problem: str):
    path = write(tmp_path / "p.jsonl", '{"id": "first", "statement": "`T`"}\n\n' + line + "\n")
    message = error(load_benchmark, path)
    assert message.startswith(f"{path}:3: ") and problem in message


def test_native_jsonl_empty_file(tmp_path: Path):
    path = write(tmp_path / "p.jsonl", "\n")
    assert error(load_benchmark, path).startswith(f"{path}: no problems")


def test_native_jsonl_non_utf8(tmp_path: Path):
    path = write(tmp_path / "p.jsonl", b'{"id": "a", "statement": "\xff"}\n')
    assert error(load_benchmark, path) == f"{path}:1: not UTF-8 text"


# --- answers -------------------------------------------------------------------------------


def official_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    """An answers CSV as s2n-bignum-bench expects it: problem_id,category,query,answer."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["problem_id", "category", "query", "answer"])
        for pid, answer in rows:
            writer.writerow([pid, "generic", GOAL, answer])
    return path


def test_answers_official_csv_multiline_and_repeated(tmp_path: Path):
    fenced = f"Proof:\n```ocaml\n{TACTIC}\n```\n"
    path = official_csv(
        tmp_path / "answers.csv",
        [("p1", TACTIC), ("p2", fenced), ("p1", 'REWRITE_TAC[] THEN "quoted, text"')],
    )

    read = read_answers(path, {"p1", "p2"})
    attempts = read.attempts

    assert not read.unknown
    assert attempts == [
        Attempt("p1", 0, TACTIC, TACTIC),
        Attempt("p2", 0, fenced, TACTIC),
        Attempt("p1", 1, 'REWRITE_TAC[] THEN "quoted, text"', 'REWRITE_TAC[] THEN "quoted, text"'),
    ]


def test_answers_csv_large_fields(tmp_path: Path):
    huge = "ARITH_TAC THEN\n" * 40_000  # 600 kB, beyond csv's default 128 kB field limit
    path = official_csv(tmp_path / "answers.csv", [("p1", huge)])
    attempts = read_answers(path, {"p1"}).attempts
    assert attempts[0].output == huge


def test_answers_unknown_problems_are_counted_once_each(tmp_path: Path):
    rows = [("ghost", "A"), ("p1", "B"), ("ghost", "C"), ("other", "D"), ("p2", "E")]
    path = official_csv(tmp_path / "answers.csv", rows)

    read = read_answers(path, {"p1"}, left_out=frozenset({"p2"}))

    assert read.attempts == [Attempt("p1", 0, "B", "B")]
    assert read.unknown == {"ghost": 2, "other": 1}
    assert read.left_out == 1  # p2 is the benchmark's, not selected: not unknown
    summary = unknown_summary(path, read.unknown, ["p1", "p2", "ghosts"])
    assert summary == (
        f"{path}: 3 answers for 2 unknown problem ids: 'ghost' (did you mean 'ghosts'?), 'other'"
    )


def test_answers_csv_header_without_answer_column(tmp_path: Path):
    path = write(tmp_path / "a.csv", "problem_id,proof\np1,ARITH_TAC\n")
    message = error(read_answers, path, {"p1"})
    assert message.startswith(f"{path}:1: ") and "answer" in message


def test_answers_csv_empty(tmp_path: Path):
    path = write(tmp_path / "a.csv", "")
    assert error(read_answers, path, {"p1"}).startswith(f"{path}: empty")


def test_answers_csv_wrong_field_count_names_the_record_line(tmp_path: Path):
    path = write(tmp_path / "a.csv", 'problem_id,answer\np1,"A\nB"\np2,C,extra\n')
    message = error(read_answers, path, {"p1", "p2"})
    assert message.startswith(f"{path}:4: ") and "3 fields" in message


def test_answers_csv_bad_quoting(tmp_path: Path):
    path = write(tmp_path / "a.csv", 'problem_id,answer\np1,"A\n')
    assert error(read_answers, path, {"p1"}).startswith(f"{path}:2: malformed CSV")


def test_answers_csv_empty_problem_id(tmp_path: Path):
    path = write(tmp_path / "a.csv", "problem_id,answer\n p1 ,A\n,B\n")
    assert error(read_answers, path, {"p1"}).startswith(f"{path}:3: problem_id")


def test_answers_jsonl_keys(tmp_path: Path):
    path = jsonl(
        tmp_path / "a.jsonl",
        {"problem_id": "p1", "answer": "A", "output": "ignored"},
        {"problem_id": "p1", "output": f"```\n{TACTIC}\n```"},
        {"problem_id": "p2", "generation": "B", "proof_status": "completed"},
    )
    read = read_answers(path, {"p1", "p2"})
    attempts = read.attempts
    assert not read.unknown
    assert [(a.problem_id, a.index, a.proof) for a in attempts] == [
        ("p1", 0, "A"),
        ("p1", 1, TACTIC),
        ("p2", 0, "B"),
    ]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"problem_id": "p1", "answer": "A"', "malformed JSON"),
        ('"p1"', "expected a JSON object"),
        ('{"answer": "A"}', "problem_id must be a non-empty string"),
        ('{"problem_id": "p1"}', "no answer field (answer, output, generation)"),
        ('{"problem_id": "p1", "answer": null}', "answer must be a string"),
    ],
)
def test_answers_jsonl_errors_name_file_and_line(tmp_path: Path, line: str, problem: str):
    path = write(tmp_path / "a.jsonl", '{"problem_id": "p1", "answer": "A"}\n' + line + "\n")
    message = error(read_answers, path, {"p1"})
    assert message.startswith(f"{path}:2: ") and problem in message


def test_a_lone_surrogate_escape_becomes_a_replacement_character(tmp_path: Path):
    """JSON can spell a lone surrogate (no character: SQLite and UTF-8 files refuse it);
    the answer is kept, with U+FFFD there, so it still gets its one verdict."""
    path = write(tmp_path / "a.jsonl", '{"problem_id": "p1", "answer": "ARITH_TAC \\ud800"}\n')
    attempts = read_answers(path, {"p1"}).attempts
    assert attempts[0].proof == "ARITH_TAC \ufffd"
    attempts[0].proof.encode()  # text again
    bench = write(tmp_path / "b.jsonl", '{"id": "p\\udfff", "statement": "`T`"}\n')
    assert load_benchmark(bench).problems[0].id == "p\ufffd"


def test_answers_non_utf8(tmp_path: Path):
    path = write(tmp_path / "a.csv", b"problem_id,answer\np1,\xc3\x28\n")
    assert error(read_answers, path, {"p1"}) == f"{path}:2: not UTF-8 text"


def test_answers_unknown_format_and_missing_file(tmp_path: Path):
    path = write(tmp_path / "a.txt", "ARITH_TAC")
    assert str(path) in error(read_answers, path, {"p1"})
    assert error(read_answers, tmp_path / "no.csv", {"p1"}) == f"no such file: {tmp_path}/no.csv"


def test_number_attempts_counts_per_problem():
    attempts = number_attempts([("a", "X"), ("b", "Y"), ("a", "```\nZ\n```")])
    assert [(a.problem_id, a.index, a.proof) for a in attempts] == [
        ("a", 0, "X"),
        ("b", 0, "Y"),
        ("a", 1, "Z"),
    ]


# --- timeouts ------------------------------------------------------------------------------


def test_policy_resolution_order():
    policy = TimeoutPolicy({"mapped": 5.0}, {"generic": 60.0}, default=30.0)
    own = Problem(id="own", statement="`T`", category="generic", timeout=9.0)
    assert policy.for_problem(Problem(id="mapped", statement="`T`", timeout=9.0)) == 5.0
    assert policy.for_problem(own) == 9.0
    assert policy.for_problem(Problem(id="c", statement="`T`", category="generic")) == 60.0
    assert policy.for_problem(Problem(id="d", statement="`T`")) == 30.0


def test_policy_files_beside_a_directory(tmp_path: Path):
    s2n_problem(tmp_path, "p1")
    entry = {"problem_id": "p1", "prove_secs": 0.1, "timeout_sec": 3}
    write(tmp_path / "timeout-map.json", json.dumps([entry]))
    write(tmp_path / "timeouts.json", '{"generic": 7200}')
    policy = load_policy(tmp_path, None, None, 50.0)
    assert policy == TimeoutPolicy({"p1": 3.0}, {"generic": 7200.0}, 50.0)


def test_policy_files_beside_a_jsonl_file_and_explicit_ones(tmp_path: Path):
    problems = jsonl(tmp_path / "p.jsonl", {"id": "a", "statement": "`T`"})
    write(tmp_path / "timeouts.json", '{"generic": 10}')
    explicit = write(tmp_path / "elsewhere" / "limits.json", '{"generic": 20.5}')
    assert load_policy(problems, None, None, 1.0).per_category == {"generic": 10.0}
    assert load_policy(problems, None, explicit, 1.0).per_category == {"generic": 20.5}
    assert load_policy(tmp_path / "elsewhere", None, None, 1.0) == TimeoutPolicy({}, {}, 1.0)


def test_policy_explicit_file_missing(tmp_path: Path):
    missing = tmp_path / "map.json"
    assert error(load_policy, tmp_path, missing, None, 1.0) == f"no such file: {missing}"


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("timeout-map.json", "[\n{,", ":2: malformed JSON"),
        ("timeout-map.json", '{"p1": 3}', ": expected a JSON list"),
        ("timeout-map.json", '[{"timeout_sec": 3}]', ": entry 1: expected an object"),
        ("timeout-map.json", '[{"problem_id": "p", "timeout_sec": 0}]', ": entry 1: timeout"),
        ("timeout-map.json", '[{"problem_id": "p"}]', ": entry 1: timeout"),
        ("timeouts.json", "[7200]", ": expected a JSON object"),
        ("timeouts.json", '{"generic": "long"}', ": generic: timeout"),
        ("timeouts.json", '{"generic": NaN}', ": generic: timeout"),
        ("timeouts.json", b'{"g\xe9n": 1}', ":1: not UTF-8 text"),
    ],
)
def test_policy_bad_files_named(tmp_path: Path, name: str, text: str, problem: str):
    path = write(tmp_path / name, text)
    assert error(load_policy, tmp_path, None, None, 1.0).startswith(f"{path}{problem}")


def test_policy_official_s2n_bignum_bench_files():
    directory = shared_data("s2n-bignum-bench")
    policy = load_policy(directory, None, None, 120.0)
    assert len(policy.per_problem) == 2622
    assert set(policy.per_category) == {
        "program_state",
        "bit_vector",
        "generic",
        "functional_correctness_x86",
        "functional_correctness_arm",
    }
    first = json.loads((directory / "timeout-map.json").read_text())[0]
    problem = Problem(id=first["problem_id"], statement="`T`", category="generic")
    assert policy.for_problem(problem) == first["timeout_sec"]
    other = Problem(id="not.in.map", statement="`T`", category="bit_vector")
    assert policy.for_problem(other) == policy.per_category["bit_vector"]


def test_build_names_a_missing_source_before_starting_hol_light(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """Loading the core takes minutes in bytecode: a source that is not there is said
    first, in one line."""
    from proofeval.cli import main
    from proofeval.commands import build

    def started(*_args, **_kw):
        raise AssertionError("HOL Light was started for a build that cannot run")

    monkeypatch.setattr(build, "hol_core", started)
    missing = tmp_path / "Library" / "nope.ml"
    code = main(["build", "hol-light", str(missing), "--out", str(tmp_path / "bench")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"no such file or directory: {missing}" in err
