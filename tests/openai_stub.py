"""A real HTTP server speaking the OpenAI chat and completions APIs, for tests.

Answers are scripted per key: a text that appears in the prompt (a problem's statement, say);
the longest key found in a prompt decides. Each choice served for a key is its next answer,
cycling; a responder function, when set, answers from the prompt itself first. A script
can also fail the first requests for its key (HTTP 429, 500, ...) or delay
them (to trip a client's timeout). An answer may also be a Raw body, served as the whole
HTTP response in place of a completion (a malformed reply, say). Every request is recorded,
so tests can count retries.

    def test_x(stub_server):   # the fixture is in tests/conftest.py
        stub_server.script("`T`", ["```ocaml\\nREWRITE_TAC[]\\n```"], failures=[429])
        ... Generator(SamplingSettings(model="stub", base_url=stub_server.url, ...))
        assert stub_server.count("`T`") == 2
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from proofeval.model import Problem

DEFAULT_ANSWER = "```ocaml\nNO_TAC\n```"


@dataclass(frozen=True)
class Raw:
    """An answer served as the whole response body (status 200, application/json), however
    many choices were asked for: for replies a real server should never send."""

    body: bytes


@dataclass
class Script:
    """What the server serves for prompts that contain `key`."""

    key: str
    answers: Sequence[str | Raw]
    failures: list[int] = field(default_factory=list)  # statuses for the first requests
    delays: list[float] = field(default_factory=list)  # seconds before the first responses
    served: int = 0


@dataclass(frozen=True)
class StubRequest:
    path: str
    body: dict
    key: str | None  # the script that matched, None for the default answer
    status: int

    @property
    def n(self) -> int:
        return int(self.body.get("n") or 1)


class StubServer:
    """The server, on 127.0.0.1 at a free port; `url` is the base URL a client is given.

    ignore_n: answer one choice whatever `n` asks (as servers without `n` support do);
    reject_n: answer HTTP 400 to any n > 1; api_key: require `Authorization: Bearer KEY`.
    models: what GET /models lists (None: 404, as servers without the route answer).
    """

    def __init__(
        self,
        *,
        ignore_n: bool = False,
        reject_n: bool = False,
        api_key: str | None = None,
        default_answer: str = DEFAULT_ANSWER,
        models: Sequence[str] | None = None,
    ) -> None:
        self.models = models
        self.ignore_n = ignore_n
        self.reject_n = reject_n
        self.api_key = api_key
        self.default_answer = default_answer
        self.requests: list[StubRequest] = []
        self.responder: Callable[[str], str | None] | None = None
        self.converser: Callable[[dict], dict | None] | None = None
        self._scripts: dict[str, Script] = {}
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(
        self,
        key: str,
        answers: Sequence[str | Raw],
        *,
        failures: Sequence[int] = (),
        delays: Sequence[float] = (),
    ) -> None:
        """Serve `answers` (cycling) for prompts containing `key`, after the failures."""
        if not answers:
            raise ValueError("a script needs at least one answer")
        with self._lock:
            self._scripts[key] = Script(key, list(answers), list(failures), list(delays))

    def respond_with(self, responder: Callable[[str], str | None]) -> None:
        """Answer each prompt with responder(prompt) (called under the server's lock, so
        in turn); None falls back to the scripts. For pipelines whose prompts differ per
        request (a module, a stage)."""
        with self._lock:
            self.responder = responder

    def converse_with(self, converser: Callable[[dict], dict | None]) -> None:
        """Answer each chat request with converser(body): the assistant message (content,
        tool_calls) from the whole request (its messages, its tools); None falls back to
        the scripts. For agents that call tools."""
        with self._lock:
            self.converser = converser

    def script_problem(self, problem: Problem, answers: Sequence[str], **kwargs) -> None:
        """Script by the problem's statement, which every built-in template shows."""
        self.script(problem.statement, answers, **kwargs)

    def count(self, key: str | None = None) -> int:
        """Requests received for `key` (all requests when None), failed ones included."""
        with self._lock:
            return sum(1 for r in self.requests if key is None or r.key == key)

    def choices_served(self, key: str) -> int:
        with self._lock:
            return self._scripts[key].served

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def __enter__(self) -> StubServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- called by the handler -----------------------------------------------------------

    def _respond(self, path: str, headers, body: dict) -> tuple[int, dict | bytes, float]:
        """(status, JSON body, seconds to wait first) for one request."""
        prompt = _prompt_text(path, body)
        with self._lock:
            script = self._match(prompt)
            key = script.key if script else None
            status, payload, delay = self._decide(path, headers, body, script, prompt)
            self.requests.append(StubRequest(path, body, key, status))
        return status, payload, delay

    def _match(self, prompt: str) -> Script | None:
        found = [s for k, s in self._scripts.items() if k in prompt]
        return max(found, key=lambda s: len(s.key), default=None)

    def _decide(self, path, headers, body, script, prompt) -> tuple[int, dict | bytes, float]:
        if path not in ("/v1/chat/completions", "/v1/completions"):
            return 404, _error(f"no route {path}", "not_found"), 0.0
        if self.api_key and headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, _error("Incorrect API key provided", "invalid_api_key"), 0.0
        n = int(body.get("n") or 1)
        if n > 1 and self.reject_n:
            return 400, _error("n must be 1 on this server", "invalid_request_error"), 0.0
        delay = script.delays.pop(0) if script and script.delays else 0.0
        if script and script.failures:
            status = script.failures.pop(0)
            return status, _error(f"scripted failure {status}", "scripted"), delay
        if self.converser is not None and path.endswith("/chat/completions"):
            message = self.converser(body)
            if message is not None:
                return 200, _completion(path, body, prompt, [message]), delay
        count = 1 if self.ignore_n else n
        texts = [self._next_answer(script, prompt) for _ in range(count)]
        raw = next((t.body for t in texts if isinstance(t, Raw)), None)
        if raw is not None:
            return 200, raw, delay
        return 200, _completion(path, body, prompt, [str(t) for t in texts]), delay

    def _next_answer(self, script: Script | None, prompt: str = "") -> str | Raw:
        answer = self.responder(prompt) if self.responder else None
        if answer is not None:
            return answer
        if script is None:
            return self.default_answer
        answer = script.answers[script.served % len(script.answers)]
        script.served += 1
        return answer


def _prompt_text(path: str, body: dict) -> str:
    if path.endswith("/chat/completions"):
        return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    prompt = body.get("prompt", "")
    return prompt if isinstance(prompt, str) else "\n".join(map(str, prompt))


def _error(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


_ids = itertools.count()


def _completion(path: str, body: dict, prompt: str, texts: list[str] | list[dict]) -> dict:
    """A completion of `texts` (a dict is a whole assistant message: content, tool_calls)."""
    chat = path.endswith("/chat/completions")
    choices = [
        {
            "index": i,
            "message": t if isinstance(t, dict) else {"role": "assistant", "content": t},
            "finish_reason": "stop",
        }
        if chat
        else {"index": i, "text": t, "finish_reason": "stop", "logprobs": None}
        for i, t in enumerate(texts)
    ]
    prompt_tokens = len(prompt.split())
    completion_tokens = sum(
        len((t if isinstance(t, str) else json.dumps(t)).split()) for t in texts
    )
    return {
        "id": f"stub-{next(_ids)}",
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _handler(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms wait

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models") and stub.models is not None:
                listed = [{"id": m, "object": "model", "owned_by": "stub"} for m in stub.models]
                self._send(200, {"object": "list", "data": listed})
                return
            self._send(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._send(400, _error("malformed JSON", "invalid_request_error"))
                return
            status, payload, delay = stub._respond(self.path, self.headers, body)
            time.sleep(delay)
            self._send(status, payload)

        def _send(self, status: int, payload: dict | bytes) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): nothing to answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler
