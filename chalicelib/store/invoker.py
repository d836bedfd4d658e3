"""Asynchronous invocations of Metro's own Lambda functions (the background seek's worker).

Deployed, ``invoke`` is Lambda's Invoke with InvocationType=Event: it returns once Lambda has queued the event,
and Lambda retries a failed invocation twice. Locally nothing runs Lambda code, so the events wait in
``pending`` and the local trigger pump (chalicelib/local/invoke_pump.py) calls the handler, as Lambda would.
"""

from __future__ import annotations

import json
import queue
from typing import Any

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors


class AsyncInvoker:
    def __init__(self, config: Config) -> None:
        self._config = config
        self.pending: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()

    def invoke(self, function: str, event: dict[str, Any]) -> None:
        if not self._config.deployed:
            self.pending.put((function, event))
            return
        with aws_errors("Invoke (async)"):
            aws.lambda_(self._config).invoke(FunctionName=function, InvocationType="Event",
                                             Payload=json.dumps(event).encode())
