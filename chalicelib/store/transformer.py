"""Where message transforms' JavaScript runs: in the transform function, deployed; in this process, locally.

Deployed, V8 lives in one function only (infra/v8_layer.py: with the bundle and pyarrow's layer it would not fit
the others), whose role may write its logs and nothing else, so users' code never runs with Metro's grants. A
batch of a publish request or of a delivery is one synchronous Invoke (RequestResponse) with the transforms and the
messages; the answer holds one result per message (docs/transforms.md). Locally, and in the tests, the same batch
runs in this process.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from chalicelib.config import Config
from chalicelib.core.errors import Unavailable
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors

log = logging.getLogger(__name__)

Batch = dict[str, Any]  # {"transforms": [...], "messages": [...]} -> {"results": [...]}


class Transformer:
    def __init__(self, config: Config, in_process: Callable[[Batch], Batch]) -> None:
        self._config = config
        self._in_process = in_process

    def run(self, batch: Batch) -> Batch:
        if not self._config.deployed:
            return self._in_process(batch)
        with aws_errors("Invoke (transform)"):
            resp = aws.lambda_(self._config).invoke(FunctionName=self._config.transform_function,
                                                    InvocationType="RequestResponse",
                                                    Payload=json.dumps(batch).encode())
        payload = resp["Payload"].read()
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = None
        if resp.get("FunctionError") or not isinstance(answer, dict) or not isinstance(answer.get("results"), list):
            log.error("the transform function failed: %s %.200r", resp.get("FunctionError", "bad answer"), payload)
            raise Unavailable("The message transforms could not run; try again.")
        return answer
