"""Ask any OpenAI-compatible endpoint (OpenAI, vLLM's `vllm serve`, ...) for completions.

Requests run on `concurrency` threads. Each asks for all of a problem's missing samples at
once with `n`; a server that answers fewer choices than asked (it ignores `n`) or rejects
`n` with HTTP 400 is then asked one sample per request, for this and every later problem.
Rate limits (429), server errors (5xx), timeouts and lost connections are retried with
capped exponential backoff and jitter; the openai package's own retries are off, so this
loop is the only one; each retry is counted by its cause (`retried`, and `on_retry` as
it happens). Anything else (401, 404, ...) stops the run with a one-line error.
`preflight` asks once, cheaply, whether the endpoint answers and serves the model, before
a caller starts anything slow.
A reply of the wrong shape (generate/reply.py reads it) is not retried: it is that task's
failure, handed to `on_malformed` when the caller gives one, else a one-line error.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import openai

from proofeval.errors import InputError
from proofeval.generate.reply import MalformedReply, Style, parse_reply
from proofeval.model import Generation, Problem

NO_KEY = "EMPTY"  # what local servers without authentication are given
OnMalformed = Callable[[Problem, tuple[int, ...], str], None]


class GenerationError(InputError):
    """The endpoint could not give the completions asked for (reported as one line)."""


@dataclass(frozen=True)
class SamplingSettings:
    """How to ask the model. None means "not sent": the server's default applies."""

    model: str
    base_url: str | None = None  # None: the openai package's default (or $OPENAI_BASE_URL)
    style: Style = "chat"
    samples: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    concurrency: int = 8
    max_retries: int = 6
    request_timeout: float = 600.0
    api_key_env: str = "OPENAI_API_KEY"
    use_n: bool = True  # False: one request per sample
    backoff_base: float = 1.0  # seconds before the first retry; doubles each time
    backoff_cap: float = 60.0


@dataclass(frozen=True)
class _Task:
    problem: Problem
    prompt: str
    samples: tuple[int, ...]


@dataclass(frozen=True)
class _Reply:
    texts: list[str]
    prompt_tokens: int
    completion_tokens: int
    seconds: float


def openai_client(settings: SamplingSettings) -> openai.OpenAI:
    """The endpoint's client; retries are proofeval's own (settings.max_retries)."""
    key = os.environ.get(settings.api_key_env) or NO_KEY
    return openai.OpenAI(
        api_key=key,
        base_url=settings.base_url,
        max_retries=0,
        timeout=settings.request_timeout,
    )


class _NRejected(Exception):
    """HTTP 400 to a request with n > 1: the server may not support n."""


class _Stopped(Exception):
    """The run was cancelled or failed elsewhere: give up this task quietly."""


class Generator:
    """Sends requests for completions; one Generator may serve several generate() calls."""

    def __init__(self, settings: SamplingSettings) -> None:
        self.settings = settings
        self._client = openai_client(settings)
        self._n_works = settings.use_n
        self._stop = threading.Event()
        self.retried: dict[str, int] = {}  # requests retried, by cause ("429", "connection")
        self.on_retry: Callable[[str], None] = lambda _cause: None
        self._count_lock = threading.Lock()

    def preflight(self) -> None:
        """One cheap request (the model list): GenerationError when the endpoint cannot be
        reached, refuses the key, or lists models without this one. An endpoint without a
        model list passes: its first completion says what is wrong."""
        client = self._client.with_options(timeout=min(30.0, self.settings.request_timeout))
        try:
            served = [model.id for model in client.models.list().data]
        except openai.APIConnectionError as exc:
            raise GenerationError(
                f"{self.url}: cannot reach the endpoint: {_describe(exc)}"
            ) from None
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise GenerationError(
                    f"{self.url}: the endpoint refused the key (HTTP {exc.status_code}); "
                    f"the key is read from ${self.settings.api_key_env}"
                ) from None
            return
        if served and self.settings.model not in served:
            shown = ", ".join(served[:8]) + (", ..." if len(served) > 8 else "")
            model = self.settings.model
            raise GenerationError(f"{self.url}: model {model!r} is not served there ({shown})")

    def _retrying(self, failure: openai.APIError) -> None:
        cause = (
            str(failure.status_code)
            if isinstance(failure, openai.APIStatusError)
            else ("timeout" if isinstance(failure, openai.APITimeoutError) else "connection")
        )
        with self._count_lock:
            self.retried[cause] = self.retried.get(cause, 0) + 1
        self.on_retry(cause)

    @property
    def url(self) -> str:
        return str(self._client.base_url).rstrip("/")

    def cancel(self) -> None:
        """Stop asking: generate() returns soon, and later completions are dropped."""
        self._stop.set()

    def generate(
        self,
        requests: Iterable[tuple[Problem, str, list[int]]],
        on_generation: Callable[[Generation], None],
        on_malformed: OnMalformed | None = None,
    ) -> None:
        """Ask for each (problem, prompt, missing sample indices); call `on_generation`
        (from a worker thread, one call at a time) as each completion arrives, and
        `on_malformed(problem, samples, reason)` likewise for samples whose reply was
        malformed (without it, such a reply is a GenerationError).

        Returns when every sample arrived or after cancel(); raises GenerationError when
        the endpoint fails for good. Once it returns or raises, neither is called.
        """
        run = _Run(self, on_generation, on_malformed)
        run.start()
        try:
            for problem, prompt, samples in requests:
                run.add_all(self._split(_Task(problem, prompt, tuple(samples))))
        finally:
            run.fed()
        run.wait()

    def _split(self, task: _Task) -> list[_Task]:
        if self._n_works or len(task.samples) <= 1:
            return [task] if task.samples else []
        return [_Task(task.problem, task.prompt, (i,)) for i in task.samples]

    def _work(self, task: _Task, run: _Run) -> None:
        """Ask for the task's samples; deliver what arrives; queue what is still missing."""
        n = len(task.samples) if self._n_works else 1
        try:
            reply = self._with_retries(task, n)
        except _NRejected:
            self._n_works = False
            run.add_all(self._split(task))
            return
        except MalformedReply as exc:
            run.malformed(task, str(exc))
            return
        got = task.samples[: len(reply.texts)]
        tokens = _share(reply.completion_tokens, reply.texts[: len(got)])
        for sample, text, used in zip(got, reply.texts, tokens, strict=False):
            run.deliver(
                Generation(
                    problem_id=task.problem.id,
                    sample=sample,
                    prompt=task.prompt,
                    output=text,
                    model=self.settings.model,
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=used,
                    seconds=reply.seconds,
                )
            )
        rest = task.samples[len(got) :]
        if rest:
            if n > 1:  # fewer choices than asked: the server ignores n
                self._n_works = False
            run.add_all(self._split(_Task(task.problem, task.prompt, rest)))

    def _with_retries(self, task: _Task, n: int) -> _Reply:
        tries = self.settings.max_retries + 1
        for attempt in range(tries):
            if self._stop.is_set():
                raise _Stopped
            try:
                return self._ask(task.prompt, n)
            except openai.APIStatusError as exc:
                if exc.status_code == 400 and n > 1:
                    raise _NRejected from None
                if not _retryable(exc.status_code):
                    raise GenerationError(self._fatal(task, exc)) from None
                failure: openai.APIError = exc
            except openai.APIConnectionError as exc:
                failure = exc
            except openai.APIError as exc:
                raise GenerationError(f"{self.url}: {_describe(exc)}") from None
            if attempt + 1 < tries:
                self._retrying(failure)
                if self._stop.wait(self._delay(attempt, failure)):
                    raise _Stopped
        raise GenerationError(
            f"{self.url}: problem {task.problem.id}: gave up after {tries} "
            f"{'try' if tries == 1 else 'tries'}: {_describe(failure)}"
        )

    def _delay(self, attempt: int, failure: openai.APIError) -> float:
        s = self.settings
        wait = min(s.backoff_cap, s.backoff_base * 2**attempt)
        wait *= 0.5 + random.random() / 2  # jitter, so that waiting clients do not sync up
        return min(s.backoff_cap, max(wait, _retry_after(failure)))

    def _ask(self, prompt: str, n: int) -> _Reply:
        s = self.settings
        params: dict = {"model": s.model}
        if n > 1:
            params["n"] = n
        for name in ("temperature", "top_p"):
            if getattr(s, name) is not None:
                params[name] = getattr(s, name)
        start = time.monotonic()
        if s.style == "chat":
            if s.max_tokens is not None:
                params["max_completion_tokens"] = s.max_tokens
            if s.reasoning_effort is not None:
                params["reasoning_effort"] = s.reasoning_effort
            messages = [{"role": "user", "content": prompt}]
            chat = self._client.chat.completions.with_raw_response
            response = chat.create(messages=messages, **params)
        else:
            if s.max_tokens is not None:
                params["max_tokens"] = s.max_tokens
            if s.reasoning_effort is not None:
                params["extra_body"] = {"reasoning_effort": s.reasoning_effort}
            response = self._client.completions.with_raw_response.create(prompt=prompt, **params)
        # the raw body, read by our own rules: the package's objects are not validated
        reply = parse_reply(response.content, s.style)
        return _Reply(
            reply.texts, reply.prompt_tokens, reply.completion_tokens, time.monotonic() - start
        )

    def _fatal(self, task: _Task, exc: openai.APIStatusError) -> str:
        message = f"{self.url}: problem {task.problem.id}: {_describe(exc)}"
        env = self.settings.api_key_env
        if exc.status_code in (401, 403):
            state = "set" if os.environ.get(env) else "not set"
            message += f" (the API key is read from ${env}, which is {state})"
        elif exc.status_code == 404:
            message += f" (is model {self.settings.model!r} served there, under /v1?)"
        return message


class _Run:
    """One generate() call: a queue of tasks, worker threads, and the first failure."""

    def __init__(
        self,
        generator: Generator,
        on_generation: Callable[[Generation], None],
        on_malformed: OnMalformed | None,
    ):
        self.generator = generator
        self.on_generation = on_generation
        self.on_malformed = on_malformed
        self.cond = threading.Condition()
        self.delivering = threading.Lock()  # one on_generation call at a time
        self.tasks: list[_Task] = []
        self.busy = 0
        self.feeding = True
        self.over = False
        self.failure: BaseException | None = None

    def start(self) -> None:
        # Daemon threads: an interrupted run must not wait for requests still in flight.
        for _ in range(self.generator.settings.concurrency):
            threading.Thread(target=self._worker, daemon=True).start()

    def add_all(self, tasks: list[_Task]) -> None:
        with self.cond:
            self.tasks.extend(tasks)
            self.cond.notify_all()

    def fed(self) -> None:
        with self.cond:
            self.feeding = False
            self.cond.notify_all()

    def deliver(self, generation: Generation) -> None:
        with self.delivering:
            if self.over or self.generator._stop.is_set():
                return
            self.on_generation(generation)

    def malformed(self, task: _Task, reason: str) -> None:
        """The task's samples got a malformed reply: the caller's failure, or the run's."""
        if self.on_malformed is None:
            raise GenerationError(
                f"{self.generator.url}: problem {task.problem.id}: malformed reply: {reason}"
            )
        with self.delivering:
            if self.over or self.generator._stop.is_set():
                return
            self.on_malformed(task.problem, task.samples, reason)

    def wait(self) -> None:
        try:
            with self.cond:
                while not self._finished():
                    self.cond.wait(0.5)
        finally:
            with self.delivering:
                self.over = True
            with self.cond:
                self.cond.notify_all()
        if self.failure is not None:
            raise self.failure

    def _finished(self) -> bool:
        idle = not self.feeding and not self.tasks and self.busy == 0
        return idle or self.failure is not None or self.generator._stop.is_set()

    def _worker(self) -> None:
        while (task := self._next()) is not None:
            try:
                self.generator._work(task, self)
            except _Stopped:
                pass
            except BaseException as exc:
                with self.cond:
                    self.failure = self.failure or exc
            finally:
                with self.cond:
                    self.busy -= 1
                    self.cond.notify_all()

    def _next(self) -> _Task | None:
        with self.cond:
            while not self.tasks and not self.over:
                self.cond.wait()
            if self.over or self.failure is not None:
                return None
            self.busy += 1
            return self.tasks.pop(0)


def _retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _retry_after(failure: openai.APIError) -> float:
    """The seconds a 429 or 503 asks the client to wait (Retry-After), else 0."""
    response = getattr(failure, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0  # an HTTP date: rare from these servers; backoff applies


def _describe(exc: openai.APIError) -> str:
    if isinstance(exc, openai.APIStatusError):
        text = f"HTTP {exc.status_code}: {exc.message}"
    elif isinstance(exc, openai.APITimeoutError):
        text = "request timed out"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        text = f"cannot reach the endpoint: {cause or exc}"
    else:
        text = str(exc)
    return " ".join(text.split())[:300]


def _share(total: int, texts: list[str]) -> list[int]:
    """Split a response's completion tokens among its choices by their length.

    The usage of a response with n choices is one total; per choice it is estimated.
    """
    if len(texts) == 1:
        return [total]
    weights = [len(t) or 1 for t in texts]
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    shares[-1] += total - sum(shares)
    return shares
