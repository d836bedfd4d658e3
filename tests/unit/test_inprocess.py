"""The local stack's in-process AWS transport (chalicelib/local/inprocess.py) and the memoized User-Agent
sanitizer (store/aws.py): a request reaches the application as werkzeug's server would hand it over, its answer
comes back to botocore whole, requests to other endpoints go over the network, and the sanitizer answers what
botocore's own does."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from botocore import useragent
from botocore.awsrequest import AWSPreparedRequest

from chalicelib.local.inprocess import InProcessTransport, environ_of
from chalicelib.store import aws  # noqa: F401  (memoizes the sanitizer)

pytestmark = pytest.mark.unit

ENDPOINT = "http://127.0.0.1:4566"


def _request(url: str, body: Any = b"{}", method: str = "POST") -> AWSPreparedRequest:
    headers = {"X-Amz-Target": "AmazonSQS.SendMessage", "Content-Type": "application/x-amz-json-1.0",
               "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261126/us-east-1/sqs/aws4_request"}
    return AWSPreparedRequest(method, url, headers, body, stream_output=False)


def test_the_environ_is_what_the_http_server_would_build() -> None:
    environ = environ_of(_request(f"{ENDPOINT}/metro-messages/raw/a%2Bb%20c?versionId=1", method="PUT"), b"xyz")
    assert environ["REQUEST_METHOD"] == "PUT"
    assert environ["PATH_INFO"] == "/metro-messages/raw/a+b c"
    assert environ["RAW_URI"] == "/metro-messages/raw/a%2Bb%20c?versionId=1"
    assert environ["QUERY_STRING"] == "versionId=1" and environ["HTTP_HOST"] == "127.0.0.1:4566"
    assert environ["HTTP_X_AMZ_TARGET"] == "AmazonSQS.SendMessage"
    assert environ["CONTENT_TYPE"] == "application/x-amz-json-1.0"
    assert environ["CONTENT_LENGTH"] == "3" and environ["wsgi.input"].read() == b"xyz"


def test_answers_come_back_to_botocore_and_other_endpoints_are_left_alone() -> None:
    seen: list[bytes] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        seen.append(environ["wsgi.input"].read())
        start_response("201 Created", [("Content-Type", "application/json"), ("x-amz-meta", "a"),
                                       ("x-amz-meta", "b")])
        return [b'{"ok":', b" true}"]

    transport = InProcessTransport(app, ENDPOINT)
    answer = transport(_request(f"{ENDPOINT}/", io.BytesIO(b'{"a": 1}')))
    assert answer is not None and answer.status_code == 201 and answer.content == b'{"ok": true}'
    assert answer.headers["x-amz-meta"] == "a, b" and seen == [b'{"a": 1}']
    assert transport(_request("https://sqs.us-east-1.amazonaws.com/")) is None
    assert transport(_request("http://127.0.0.1:45660/")) is None  # another port that starts alike
    assert transport.calls == 1


@pytest.mark.parametrize(("raw", "allow_hash"), [("Boto3/1.35", False), ("md/a b#c", True), ("md/a b#c", False),
                                                ("ünï cödé", False), ("", True)])
def test_the_memoized_sanitizer_answers_as_botocore_s(raw: str, allow_hash: bool) -> None:
    memo: Any = useragent.sanitize_user_agent_string_component
    original = memo.__wrapped__
    assert memo(raw, allow_hash) == original(raw, allow_hash)
    before = memo.cache_info().hits
    memo(raw, allow_hash)
    assert memo.cache_info().hits == before + 1
