"""One chat turn with function calling (OpenAI-compatible `tools`), for agentic runs.

The reply is read from the raw body by our own rules, like generate/reply.py: a message
with optional content and tool calls (id, function name, arguments as the model's text:
parsing them is the caller's, since a model may send malformed JSON). Rate limits, server
errors and lost connections are retried with capped backoff; other errors are one line.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Any

import openai

from proofeval.generate.client import GenerationError, SamplingSettings, openai_client
from proofeval.generate.reply import MalformedReply, json_body, reply_kind, usage_of

TEXT_LIMIT = 100_000  # characters of any one text of a reply that are kept


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model wrote it


@dataclass(frozen=True)
class ChatTurn:
    content: str
    tool_calls: list[ToolCall]
    prompt_tokens: int
    completion_tokens: int
    seconds: float

    def message(self) -> dict:
        """The assistant message to send back in the conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]  # fmt: skip
        return msg


class ChatClient:
    def __init__(self, settings: SamplingSettings) -> None:
        self.settings = settings
        self._client = openai_client(settings)

    def ask(self, messages: list[dict], tools: list[dict]) -> ChatTurn:
        s = self.settings
        params: dict[str, Any] = {"model": s.model, "messages": messages, "tools": tools}
        for name in ("temperature", "top_p", "reasoning_effort"):
            if getattr(s, name) is not None:
                params[name] = getattr(s, name)
        if s.max_tokens is not None:
            params["max_completion_tokens"] = s.max_tokens
        for attempt in range(s.max_retries + 1):
            start = time.monotonic()
            try:
                raw = self._client.chat.completions.with_raw_response.create(**params)
                return parse_turn(raw.content, time.monotonic() - start)
            except openai.APIStatusError as exc:
                if not (exc.status_code in (408, 409, 429) or exc.status_code >= 500):
                    raise GenerationError(f"{s.base_url}: HTTP {exc.status_code}") from None
            except openai.APIConnectionError:
                pass
            time.sleep(min(s.backoff_cap, s.backoff_base * 2**attempt) * random.uniform(0.5, 1))
        raise GenerationError(f"{s.base_url}: gave up after {s.max_retries + 1} tries")


def parse_turn(body: bytes, seconds: float) -> ChatTurn:
    doc = json_body(body)
    if not isinstance(doc, dict) or not isinstance(doc.get("choices"), list) or not doc["choices"]:
        raise MalformedReply("the reply has no choices")
    choice = doc["choices"][0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedReply(f"the choice's message is {reply_kind(message)}")
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise MalformedReply(f"the message's content is {reply_kind(content)}, not a string")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise MalformedReply(f'"tool_calls" is {reply_kind(calls)}, not a list')
    prompt_tokens, completion_tokens = usage_of(doc.get("usage"))
    return ChatTurn(
        content[:TEXT_LIMIT], [_call(c) for c in calls], prompt_tokens, completion_tokens, seconds
    )


def _call(call: Any) -> ToolCall:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        raise MalformedReply("a tool call has no function")
    name, arguments = fn.get("name"), fn.get("arguments", "")
    if not isinstance(name, str) or not isinstance(call.get("id", ""), str):
        raise MalformedReply("a tool call's name or id is not a string")
    if not isinstance(arguments, str):  # some servers send an object: keep it as JSON text
        arguments = json.dumps(arguments)
    return ToolCall(str(call.get("id") or ""), name[:200], arguments[:TEXT_LIMIT])
