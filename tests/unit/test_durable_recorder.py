"""The durable recorder (chalicelib/local/durable/recorder.py) around a stand-in WSGI application: what is
journaled (answered writes, receives that handed out messages) and what is not (reads, refused writes, empty
receives); a replay gives each call its recorded clock and seed; a long poll is short polls that a write wakes."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from chalicelib.local.durable import clock, journal
from chalicelib.local.durable.data_dir import DataDir
from chalicelib.local.durable.recorder import DurableEmulator

pytestmark = pytest.mark.unit


class StandIn:
    """A WSGI application: answers by X-Amz-Target; records the clock and a random draw of each call it ran."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float, int]] = []
        self.queue: list[str] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        import moto.sqs.models as sqs_models
        from moto.moto_api._internal import mock_random

        action = environ["HTTP_X_AMZ_TARGET"].rsplit(".", 1)[-1]
        body = json.loads(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])) or b"{}")
        self.seen.append((action, sqs_models.unix_time(), mock_random.getrandbits(32)))
        status, answer = "200 OK", {}
        if action == "SendMessage":
            self.queue.append(body["MessageBody"])
        elif action == "ReceiveMessage":
            assert body.get("WaitTimeSeconds", 0) == 0, "the recorder asks for short polls only"
            answer = {"Messages": [{"ReceiptHandle": "h", "Body": self.queue.pop(0)}]} if self.queue else {}
        elif action == "Refused":
            status = "400 Bad Request"
        start_response(status, [("Content-Type", "application/json")])
        return [json.dumps(answer).encode()]


def _environ(action: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    raw = json.dumps(body or {}).encode()
    return {"REQUEST_METHOD": "POST", "PATH_INFO": "/", "HTTP_X_AMZ_TARGET": f"AmazonSQS.{action}",
            "CONTENT_TYPE": "application/x-amz-json-1.0", "CONTENT_LENGTH": str(len(raw)),
            "wsgi.input": io.BytesIO(raw)}


def _call(app: DurableEmulator, action: str, body: dict[str, Any] | None = None) -> tuple[str, bytes]:
    status: list[str] = []
    chunks = app(_environ(action, body), lambda s, h: status.append(s))
    return status[0], b"".join(chunks)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _emulator(data: Path, app: StandIn) -> DurableEmulator:
    emulator = DurableEmulator(app, DataDir(data, sync=False), "test", snapshot_bytes=1 << 30)
    emulator.restore()
    return emulator


def test_only_answered_writes_and_receives_that_handed_out_messages_are_journaled(data: Path) -> None:
    app = StandIn()
    emulator = _emulator(data, app)
    _call(emulator, "SendMessage", {"MessageBody": "m"})
    _call(emulator, "GetQueueAttributes")
    _call(emulator, "Refused")
    _call(emulator, "ReceiveMessage")  # hands out "m"
    _call(emulator, "ReceiveMessage")  # empty
    kept = journal.read(data / "journal-0.log").calls
    assert [c.environ["HTTP_X_AMZ_TARGET"] for c in kept] == ["AmazonSQS.SendMessage", "AmazonSQS.ReceiveMessage"]
    emulator.close()  # a clean stop folds the journal into a snapshot
    assert (data / "snapshot.pickle").exists() and journal.read(data / "journal-1.log").calls == []


def test_a_replayed_call_sees_its_recorded_clock_and_seed(data: Path) -> None:
    first = StandIn()
    emulator = _emulator(data, first)
    _call(emulator, "SendMessage", {"MessageBody": "a"})
    _call(emulator, "SendMessage", {"MessageBody": "b"})
    emulator._data.close()  # as a SIGKILL leaves it: no snapshot, the journal as written
    again = StandIn()
    restored = _emulator(data, again)
    assert again.seen == first.seen and again.queue == ["a", "b"]
    with clock.held_at(5.0):
        import moto.sqs.models as sqs_models

        assert sqs_models.unix_time() == 5.0
    restored.close()


def test_a_long_poll_is_woken_by_a_write(data: Path) -> None:
    app = StandIn()
    emulator = _emulator(data, app)
    answers: list[bytes] = []
    polling = threading.Thread(target=lambda: answers.append(_call(emulator, "ReceiveMessage",
                                                                   {"WaitTimeSeconds": 20})[1]))
    polling.start()
    while sum(1 for action, _, _ in app.seen if action == "ReceiveMessage") < 1:
        threading.Event().wait(0.01)  # the first short poll ran (and found nothing)
    _call(emulator, "SendMessage", {"MessageBody": "late"})
    polling.join(5)
    assert not polling.is_alive() and json.loads(answers[0])["Messages"][0]["Body"] == "late"
    emulator.close()
