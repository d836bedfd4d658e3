"""The request size the deployed path carries (core/limits.py): Lambda's 6 MB event, base64 for binary bodies."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from chalicelib.core import limits
from chalicelib.core.errors import InvalidArgument
from infra.names import StageNames

CONFIG = json.loads((Path(__file__).resolve().parents[2] / ".chalice" / "config.json").read_text())


def test_the_deployed_limit_leaves_room_for_the_event_within_six_megabytes() -> None:
    assert limits.DEPLOYED_MAX_REQUEST_BYTES + limits.PROXY_EVENT_OVERHEAD_BYTES == limits.LAMBDA_SYNC_PAYLOAD_BYTES
    assert limits.DEPLOYED_MAX_REQUEST_BYTES < limits.MAX_REQUEST_BYTES  # below Google's 10 MB
    # the deploy's template merge sets it on every deployed function (infra/template.py)
    assert int(StageNames("prod").environment()["METRO_MAX_REQUEST_BYTES"]) == limits.DEPLOYED_MAX_REQUEST_BYTES
    assert "METRO_MAX_REQUEST_BYTES" not in json.dumps(CONFIG)  # not for Chalice's local test client


def test_a_body_at_the_limit_passes_and_one_byte_more_is_invalid_argument() -> None:
    limit = limits.DEPLOYED_MAX_REQUEST_BYTES
    limits.check_request_size(limit, limit)
    with pytest.raises(InvalidArgument, match=f"Request payload size exceeds the limit: {limit} bytes."):
        limits.check_request_size(limit + 1, limit)
    limits.check_request_size(10**9, 0)  # 0: no limit (local mode keeps Google's own checks)


def test_a_binary_body_is_limited_to_what_fits_after_base64() -> None:
    limit = limits.DEPLOYED_MAX_REQUEST_BYTES
    allowed = limits.carried_request_bytes(limit, base64_encoded=True)
    assert len(base64.b64encode(bytes(allowed))) <= limit < len(base64.b64encode(bytes(allowed + 3)))
    limits.check_request_size(allowed, limit, base64_encoded=True)
    with pytest.raises(InvalidArgument):
        limits.check_request_size(allowed + 1, limit, base64_encoded=True)
