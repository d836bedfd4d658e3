"""The fault run's REST client: Google's dialect over HTTP/1.1 with ``requests``, each failure a ``Failed``."""

from __future__ import annotations

from typing import Any

import requests

from bench.chaos.history import ERROR, OK, UNKNOWN


class Failed(Exception):
    """A request that did not succeed: a connection error, a timeout or a non-2xx answer."""

    def __init__(self, kind: str, status: int = 0, body: Any = None) -> None:
        super().__init__(kind)
        self.kind, self.status, self.body = kind, status, body

    @property
    def outcome(self) -> str:
        """``error`` for a definite refusal (a 4xx other than 408 and 429: nothing happened), else ``unknown``."""
        return ERROR if 400 <= self.status < 500 and self.status not in (408, 429) else UNKNOWN


def outcome_of(error: Failed | None) -> str:
    return OK if error is None else error.outcome


class Client:
    def __init__(self, url: str, project: str) -> None:
        self.base = f"{url}/v1/projects/{project}"
        self.session = requests.Session()

    def call(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        try:
            resp = self.session.request(method, f"{self.base}/{path}", json=body, timeout=timeout)
        except requests.RequestException as exc:
            self.session = requests.Session()  # the API restarted: new connections
            raise Failed(type(exc).__name__) from exc
        return answer(resp)


def answer(resp: requests.Response, dialect: str = "HTTP") -> Any:
    """A 200's JSON body (``{}`` when empty); any other status raises ``Failed`` with the error body."""
    if resp.status_code != 200:
        try:
            payload = resp.json()
        except ValueError:
            payload = resp.text[:200]
        raise Failed(f"{dialect} {resp.status_code}", resp.status_code, payload)
    return resp.json() if resp.content else {}


def failed_ack_ids(error: Failed) -> set[str] | None:
    """The ack ids an exactly-once acknowledge refused (Google's ErrorInfo metadata); None: not such an answer."""
    if error.status != 400 or not isinstance(error.body, dict):
        return None
    for detail in error.body.get("error", {}).get("details", []):
        if detail.get("reason") == "EXACTLY_ONCE_ACKID_FAILURE":
            return set(detail.get("metadata", {}))
    return None
