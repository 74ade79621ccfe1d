"""A webhook receiver on loopback for completion callbacks (infra/runtime/callbacks.py): it
keeps every request it gets (headers, body, when) and answers 500 to the first `fail_first`
of them, 204 after.

    with CallbackReceiver(fail_first=5) as receiver:
        ...  # options.callback_url = receiver.url
        receiver.received  # [Received(headers, body, at)]
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    at: float  # time.time()
    answered: int


class CallbackReceiver:
    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/hook"

    def delivered(self) -> list[Received]:
        """The requests answered 2xx."""
        with self._lock:
            return [r for r in self.received if r.answered < 300]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver._lock:
                    status = 500 if len(receiver.received) < receiver.fail_first else 204
                    receiver.received.append(
                        Received(dict(self.headers.items()), body, time.time(), status)
                    )
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

        return Handler

    def __enter__(self) -> CallbackReceiver:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
