"""Calling a WSGI application in the process, as a server would: the environment's fixed ``wsgi.*`` fields around
a request body, and the answer collected whole (status line, headers, body). The durable recorder replays and runs
the emulator's calls this way (local/durable/recorder.py), and the in-process transport hands them to it
(local/inprocess.py)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def server_fields(body: bytes, scheme: str = "http") -> dict[str, Any]:
    """What a WSGI server adds to a request's own fields: its body as the input stream, and the ``wsgi.*`` keys."""
    return {"CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
            "wsgi.version": (1, 0), "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
            "wsgi.url_scheme": scheme}


def call(app: WsgiApp, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """Run ``app`` on ``environ``; its status line, headers and whole body."""
    answered: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        answered[:] = [status, list(headers)]

    chunks = app(environ, start_response)
    try:
        body = b"".join(chunks)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    return answered[0], answered[1], body
