"""A scripted LLM provider on 127.0.0.1: OpenAI chat completions (plain and SSE-streamed) and
Anthropic messages, both on one threaded `http.server`.

Each request takes the next step of the script (a `Reply`), or the default reply when the script
is empty, and is recorded (path, headers, parsed body) so a test can read what the proposer sent.
Every reply carries usage, so token and cost accounting can be checked against it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = ""
    status: int = 200  # 429 / 500 / ... return an error body instead of a completion
    delay_s: float = 0.0  # sleep before answering (past the client's timeout: a slow reply)
    cut: bool = False  # streamed: send half the chunks, then drop the connection
    prompt_tokens: int = 100
    completion_tokens: int = 50
    choices: list[str] | None = None  # several choices (OpenAI `n`)
    echo_auth: bool = False  # an error body that quotes the request's credentials back
    retry_after: str | None = "0"  # the Retry-After header of a 429 (None: no header)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    t: float = field(default_factory=time.time)  # when the request arrived (wall clock, as events)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    def text(self) -> str:
        """Every message's text, as one string (OpenAI or Anthropic shapes)."""
        parts = []
        system = self.body.get("system")
        if isinstance(system, str):
            parts.append(system)
        elif isinstance(system, list):
            parts += [b.get("text", "") for b in system if isinstance(b, dict)]
        for m in self.messages:
            c = m.get("content")
            if isinstance(c, str):
                parts.append(c)
            elif isinstance(c, list):
                parts += [b.get("text", "") for b in c if isinstance(b, dict)]
        return "\n".join(parts)

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        if not users:
            return ""
        c = users[-1].get("content")
        return c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c)


@dataclass
class FakeProvider:
    server: ThreadingHTTPServer
    script: deque = field(default_factory=deque)
    received: list[Received] = field(default_factory=list)
    default: Reply = field(default_factory=lambda: Reply(text="no script left"))
    lock: threading.Lock = field(default_factory=threading.Lock)
    answered: int = 0  # requests whose reply has been sent in full (or cut): the rest are in flight

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def openai_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def push(self, *replies: Reply | str) -> None:
        for r in replies:
            self.script.append(Reply(text=r) if isinstance(r, str) else r)

    def next(self) -> Reply:
        with self.lock:
            return self.script.popleft() if self.script else self.default

    def calls(self, path: str = "") -> list[Received]:
        return [r for r in self.received if path in r.path]


def _handler(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            with fake.lock:
                fake.received.append(Received(self.path, dict(self.headers), body, raw))
            reply = fake.next()
            try:
                self._answer(reply, body)
            finally:
                with fake.lock:
                    fake.answered += 1

        def _answer(self, reply: Reply, body: dict[str, Any]) -> None:
            if reply.delay_s:
                time.sleep(reply.delay_s)
            anthropic = self.path.rstrip("/").endswith("/messages")
            if reply.status != 200:
                auth = self.headers.get("Authorization") or self.headers.get("x-api-key") or ""
                self._retry_after = reply.retry_after
                return self._error(reply.status, anthropic, auth if reply.echo_auth else "")
            stream = bool(body.get("stream"))
            model = str(body.get("model", "fake"))
            try:
                if anthropic:
                    self._anthropic(reply, model, stream)
                else:
                    self._openai(reply, model, stream, int(body.get("n") or 1))
            except (BrokenPipeError, ConnectionResetError):
                pass

        # --- helpers ------------------------------------------------------------------------
        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            after = getattr(self, "_retry_after", "0")
            if status == 429 and after is not None:
                self.send_header("Retry-After", after)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, anthropic: bool, echo: str = "") -> None:
            msg = {429: "rate limited, slow down", 500: "internal server error"}.get(
                status, "bad request"
            )
            if echo:
                msg += f" (credentials received: {echo})"
            if anthropic:
                kind = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}.get(
                    status, "api_error"
                )
                self._send(status, {"type": "error", "error": {"type": kind, "message": msg}})
            else:
                self._send(
                    status, {"error": {"message": msg, "type": "server_error", "code": status}}
                )

        def _sse_start(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def _sse(self, data: str, event: str | None = None) -> None:
            head = f"event: {event}\n" if event else ""
            self.wfile.write(f"{head}data: {data}\n\n".encode())
            self.wfile.flush()

        def _cut(self) -> None:
            """Drop the connection mid-stream, no [DONE], no final chunk."""
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def _openai(self, reply: Reply, model: str, stream: bool, n: int) -> None:
            texts = reply.choices or [reply.text] * max(n, 1)
            usage = {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens * len(texts),
                "total_tokens": reply.prompt_tokens + reply.completion_tokens * len(texts),
            }
            if not stream:
                self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [
                            {
                                "index": i,
                                "message": {"role": "assistant", "content": t},
                                "finish_reason": "stop",
                            }
                            for i, t in enumerate(texts)
                        ],
                        "usage": usage,
                    },
                )
                return
            self._sse_start()
            text = texts[0]
            pieces = [text[i : i + 40] for i in range(0, len(text), 40)] or [""]
            base = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
            }
            self._sse(
                json.dumps(
                    {
                        **base,
                        "choices": [
                            {
                                "index": 0,
                                "delta": {"role": "assistant", "content": ""},
                                "finish_reason": None,
                            }
                        ],
                    }
                )
            )
            for k, p in enumerate(pieces):
                if reply.cut and k >= max(len(pieces) // 2, 1):
                    return self._cut()
                self._sse(
                    json.dumps(
                        {
                            **base,
                            "choices": [
                                {"index": 0, "delta": {"content": p}, "finish_reason": None}
                            ],
                        }
                    )
                )
            if reply.cut:
                return self._cut()
            self._sse(
                json.dumps(
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                )
            )
            self._sse(json.dumps({**base, "choices": [], "usage": usage}))
            self._sse("[DONE]")

        def _anthropic(self, reply: Reply, model: str, stream: bool) -> None:
            usage = {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens}
            if not stream:
                self._send(
                    200,
                    {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [{"type": "text", "text": reply.text}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": usage,
                    },
                )
                return
            self._sse_start()
            start = {
                "type": "message_start",
                "message": {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": 1},
                },
            }
            self._sse(json.dumps(start), "message_start")
            self._sse(
                json.dumps(
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    }
                ),
                "content_block_start",
            )
            pieces = [reply.text[i : i + 40] for i in range(0, len(reply.text), 40)] or [""]
            for k, p in enumerate(pieces):
                if reply.cut and k >= max(len(pieces) // 2, 1):
                    return self._cut()
                self._sse(
                    json.dumps(
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": p},
                        }
                    ),
                    "content_block_delta",
                )
            if reply.cut:
                return self._cut()
            self._sse(json.dumps({"type": "content_block_stop", "index": 0}), "content_block_stop")
            self._sse(
                json.dumps(
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                        "usage": {"output_tokens": reply.completion_tokens},
                    }
                ),
                "message_delta",
            )
            self._sse(json.dumps({"type": "message_stop"}), "message_stop")

    return Handler


def start() -> FakeProvider:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    server.daemon_threads = True
    fake = FakeProvider(server)
    server.RequestHandlerClass = _handler(fake)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return fake
