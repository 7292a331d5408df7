"""Check many Coq attempts in parallel: each worker thread keeps one warm coqtop with one
header loaded and takes the attempts of that header while there are any, then moves to
the header with the fewest workers on it. A header's problems are type-checked once
(their statements), and each attempt is screened (policy), checked (session) and judged
(verdict)."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from proofeval.errors import CheckerError, InputError
from proofeval.model import Outcome, Problem, Stage, Verdict
from proofeval.provers.coq import compat, detect, libraries, verdict
from proofeval.provers.coq.policy import Refusal, prepare, theorem_name
from proofeval.provers.coq.project import Project, TreeCopy, open_project
from proofeval.provers.coq.recheck import recheck
from proofeval.provers.coq.session import (
    CoqSession,
    Limits,
    Report,
    Timeout,
    coq_version,
    coqtop_binary,
    newer_rocq_hint,
)
from proofeval.provers.coq.toolchain import Toolchain, resolve
from proofeval.provers.interface import (
    CheckSettings,
    EventCallback,
    Job,
    ResultCallback,
    checker_failure,
)
from proofeval.provers.sandbox import check_bwrap_works

HEADER_LIMIT = 600.0  # seconds to load one header
# What a warm coqtop is for: a problem's tree (`directory`, whose _CoqProject gives the load
# paths; "" for none), its header, and the Coq toolchain it names ("": the host's).
Context = tuple[str, str, str]


def context(problem: Problem) -> Context:
    return (problem.directory, problem.header, problem.coq_toolchain)


class Queue:
    """The jobs of each header as they arrive, and how many workers are on each."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.pending: dict[Context, deque[Job]] = {}
        self.active: dict[Context, int] = {}
        self.finished = False

    def add(self, job: Job) -> None:
        with self.cond:
            self.pending.setdefault(context(job.problem), deque()).append(job)
            self.active.setdefault(context(job.problem), 0)
            self.cond.notify()

    def finish(self, drop: bool = False) -> None:
        """No more jobs will come; with `drop`, forget those not started."""
        with self.cond:
            self.finished = True
            if drop:
                self.pending.clear()
            self.cond.notify_all()

    def next(self, current: Context | None) -> Job | None:
        """The next job for a worker on `current`: the same header while it has jobs,
        else the header with the fewest workers; None when all are done."""
        with self.cond:
            while True:
                if current is not None and self.pending.get(current):
                    return self.pending[current].popleft()
                waiting = [h for h, jobs in self.pending.items() if jobs]
                if waiting or self.finished:
                    break
                self.cond.wait()
            if current is not None:
                self.active[current] -= 1
            if not waiting:
                return None
            header = min(waiting, key=lambda h: self.active[h])
            self.active[header] += 1
            return self.pending[header].popleft()


class Worker:
    """One thread's warm coqtop and what it knows about its header."""

    def __init__(self, checker: CoqChecker) -> None:
        self.checker = checker
        self.header: Context | None = None
        self.session: CoqSession | None = None

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def check(self, job: Job) -> Outcome:
        problem = job.problem
        name = theorem_name(problem.statement)
        if name is None:
            return _precheck_error("the statement is not `Theorem name : ... .`")
        why = self.checker.unusable(self, problem)
        if why:
            return _precheck_error(why)
        start = time.monotonic()
        try:
            script = prepare(job.attempt.proof, name)
        except Refusal as refusal:
            return verdict.refused(refusal)
        left = job.timeout - (time.monotonic() - start)  # the screen's time counts too
        if left <= 0:
            return Outcome(Verdict.TIMEOUT, Stage.PRECHECK, job.timeout, "screening took the limit")
        text = f"{script.lemmas}\n{sentence(problem.statement)}\n{script.proof}\n"
        report = self.run(text, problem.statement, left)
        second = None
        if self.checker.settings.replay and verdict.decide(report).verdict is Verdict.OK:
            flags = self.session.flags if self.session is not None else ()
            limits = self.checker.limits_for(problem.coq_toolchain)
            header = compat.apply(problem.header, coq_version(limits.chain))[0]
            statement = sentence(problem.statement)
            second = recheck(self.checker.workdir, header, statement, text, limits,
                             job.timeout, flags, self.checker.settings.coqchk)  # fmt: skip
        return verdict.decide(report, second)

    def run(self, text: str, statement: str, timeout: float) -> Report:
        session = self.ready()
        try:
            why = self.checker.register(session, statement)
            if why:
                return Report("error", [f"the statement is unusable: {why}"])
            report = session.check(text, statement_key(statement), timeout)
        except Timeout:
            self.session = None
            return Report(timed_out=True, seconds=timeout)
        except CheckerError as exc:
            self.close()
            return Report(died=str(exc))
        if not report.word or verdict.exhausted(report):
            self.close()  # a process that ran out of memory, or did not reply, is not kept
        return report

    def ready(self) -> CoqSession:
        """This worker's session with its header loaded (started anew when needed)."""
        if self.session is None or not self.session.alive:
            assert self.header is not None
            self.session = self.checker.start(self.header)
        return self.session

    def switch(self, header: Context) -> None:
        if header != self.header:
            self.close()
            self.header = header


class CoqChecker:
    """Runs jobs through `settings.workers` threads, each driving one warm coqtop."""

    def __init__(
        self,
        settings: CheckSettings,
        on_result: ResultCallback,
        on_event: EventCallback = lambda _msg: None,
    ) -> None:
        self.settings = settings
        self.on_result = on_result
        self.on_event = on_event
        self.limits = Limits(settings.memory_mb, settings.sandbox)
        self.workdir = Path(".")
        self._lock = threading.Lock()
        self._header_errors: dict[Context, str] = {}
        self._statements: dict[tuple[Context, str], str] = {}
        self._projects: dict[tuple[str, str], Project] = {}
        self._trees: dict[tuple[Path, str], TreeCopy] = {}  # one copy per tree, shared
        self._chains: dict[str, Toolchain] = {}
        self._choices: set[str] = set()  # the reasons for detected toolchains, said once
        self.compat_applied: set[tuple[str, str, str]] = set()  # (Coq, rule, where) applied
        self.cache = libraries.Cache()  # compiled library files, shared by every tree

    def run(self, jobs: Iterable[Job], problems: Iterable[Problem] = ()) -> None:
        """Check every job; on_result is called once per attempt, from worker threads.
        Jobs are taken as they come, so they may be produced while checking goes on
        (`problems`, which the shared interface passes, is not needed). Raises only when
        no attempt can be checked: Coq or the sandbox is missing, or the toolchain that
        `settings.coq_toolchain` names (for every problem) is not installed."""
        coqtop_binary(self.chain(self.settings.coq_toolchain))
        if self.settings.sandbox:
            check_bwrap_works()
        queue = Queue()
        self.workdir = Path(tempfile.mkdtemp(prefix="proofeval-coq-"))
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=self._work, args=(queue, errors), daemon=True)
            for _ in range(max(1, self.settings.workers))
        ]
        try:
            for thread in threads:
                thread.start()
            try:
                for job in jobs:
                    if errors:
                        break
                    queue.add(self._chosen(job))
            finally:
                queue.finish(drop=bool(errors))
            for thread in threads:
                thread.join()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self.cache.compiled or self.cache.hits:
            self.on_event(
                f"library files: {self.cache.compiled} compiled ({self.cache.seconds:.1f} s), "
                f"{self.cache.hits} from the cache {self.cache.directory}"
            )
        if errors:
            raise errors[0]

    def _chosen(self, job: Job) -> Job:
        """`job` with the toolchain it runs on: `settings.coq_toolchain` when set (--coq)
        overrides the problem's own; with neither, the one its tree declares (detect.py),
        said once per reason."""
        problem = job.problem
        name, choice = detect.toolchain_for(
            self.settings.coq_toolchain, problem.coq_toolchain, problem.directory
        )
        if choice is not None:
            with self._lock:
                new = choice.reason not in self._choices
                self._choices.add(choice.reason)
            if new:
                self.on_event(
                    f"{'warning: ' if choice.warning else ''}Coq toolchain: {choice.reason}"
                )
        if problem.coq_toolchain == name:
            return job
        return dataclasses.replace(job, problem=dataclasses.replace(problem, coq_toolchain=name))

    def chain(self, name: str) -> Toolchain:
        """The toolchain `name` (InputError when it is not installed), resolved once."""
        with self._lock:
            if name not in self._chains:
                self._chains[name] = resolve(name)
            return self._chains[name]

    def limits_for(self, name: str) -> Limits:
        return dataclasses.replace(self.limits, chain=self.chain(name))

    def _work(self, queue: Queue, errors: list[BaseException]) -> None:
        worker = Worker(self)
        current: Context | None = None
        try:
            while (job := queue.next(current)) is not None:
                current = context(job.problem)
                worker.switch(current)
                outcome = self._check(worker, job)
                self.on_result(job.attempt, outcome)  # a store failure stops the run
        except BaseException as exc:  # surfaced by run()
            errors.append(exc)
            queue.finish(drop=True)
        finally:
            worker.close()

    @staticmethod
    def _check(worker: Worker, job: Job) -> Outcome:
        try:
            return worker.check(job)
        except Exception as exc:  # whatever went wrong, it is this attempt's ERROR
            worker.close()
            return checker_failure(exc)

    def start(self, key: Context) -> CoqSession:
        """A new session with the header loaded, and the load paths of its tree's
        _CoqProject (libraries compiled first); CheckerError if the header does not load."""
        directory, header, name = key
        known = self._header_errors.get(key)
        if known:
            raise CheckerError(known)
        try:
            limits = self.limits_for(name)
        except InputError as exc:
            raise CheckerError(str(exc)) from None
        self.on_event(f"starting coqtop for a header of {len(header.splitlines())} lines")
        # a header, never a statement
        text, applied = compat.apply(header, coq_version(limits.chain))
        path = self._file("h", text)
        project = self._project(directory, limits) if directory else None
        try:
            flags = project.prepare(path) if project is not None else []
        except CheckerError as exc:
            with self._lock:
                self._header_errors[key] = f"the header's libraries: {exc}"
            raise CheckerError(self._header_errors[key]) from None
        finally:
            self._note_compat(applied, project, limits.chain)
        session = CoqSession(self.workdir, limits, flags)
        try:
            error = session.load_file(path, HEADER_LIMIT)
        except (Timeout, CheckerError) as exc:
            error = str(exc) or "loading the header timed out"
        if error:
            session.close()
            with self._lock:
                hint = newer_rocq_hint(header, error, limits.chain)
                self._header_errors[key] = f"the header does not load{hint}: {error}"
            raise CheckerError(self._header_errors[key])
        session.snapshot()
        return session

    def _project(self, directory: str, limits: Limits) -> Project:
        key = (directory, limits.chain.name)  # each toolchain compiles its own .vo files
        with self._lock:
            if key not in self._projects:
                self._projects[key] = open_project(
                    Path(directory), self.workdir, limits, self._trees,
                    self.settings.workers, self.cache,
                )  # fmt: skip
            return self._projects[key]

    def _note_compat(self, header: list[str], project: Project | None, chain: Toolchain) -> None:
        """Say (once per rule) which compatibility rules this run applied, and to what."""
        coq = chain.describe()
        used = [(coq, rule, "headers") for rule in header]
        applied = sorted(project.applied if project else ())
        used += [(coq, rule, "library files") for rule in applied]
        with self._lock:
            new = [entry for entry in used if entry not in self.compat_applied]
            self.compat_applied.update(new)
        for coq, rule, where in new:
            self.on_event(f"compatibility with {coq}: {rule} (in {where})")

    def unusable(self, worker: Worker, problem: Problem) -> str:
        """Why `problem`'s statement cannot be checked ("" when it elaborates)."""
        key = (context(problem), problem.statement)
        with self._lock:
            if key in self._statements:
                return self._statements[key]
        try:
            why = self.register(worker.ready(), problem.statement)
        except CheckerError as exc:
            return str(exc)
        why = f"the statement is unusable: {why}" if why else ""
        with self._lock:
            self._statements[key] = why
        return why

    def register(self, session: CoqSession, statement: str) -> str:
        """Have `session` elaborate `statement` (once); why it cannot, or ""."""
        return session.statement(statement_key(statement), self._file("s", sentence(statement)))

    def _file(self, stem: str, text: str) -> Path:
        digest = hashlib.sha256(text.encode()).hexdigest()[:24]
        path = self.workdir / f"{stem}_{digest}.v"
        with self._lock:
            if not path.exists():
                path.write_text(text)
        return path


def statement_key(statement: str) -> str:
    """The name a session keeps an elaborated statement under."""
    return hashlib.sha256(statement.encode()).hexdigest()[:24]


def sentence(statement: str) -> str:
    """The statement as one sentence: JSONL statements may leave out the final period."""
    statement = statement.rstrip()
    return statement if statement.endswith(".") else statement + "."


def _precheck_error(message: str) -> Outcome:
    return Outcome(Verdict.ERROR, Stage.PRECHECK, 0.0, message)
