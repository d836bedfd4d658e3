"""The local stack's journal, snapshots and call classes (chalicelib/local/durable/): a record cut anywhere is
dropped whole and what precedes it kept; a file that is not a journal is refused; snapshots keep moto's locks
and lambda factories; which calls change state."""

from __future__ import annotations

import io
import json
import pickle
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from chalicelib.local.durable import classify, journal, snapshot
from chalicelib.local.durable.data_dir import DataDir, DataDirInUse, wipe

pytestmark = pytest.mark.unit


def _call(i: int) -> journal.Call:
    return journal.Call(1_800_000_000.0 + i, i, {"REQUEST_METHOD": "POST", "PATH_INFO": f"/{i}"}, b"body-%d" % i)


def _journal(path: Path, n: int) -> None:
    j = journal.Journal(path, 0, sync=False)
    for i in range(n):
        j.append(_call(i))
    j.close()


def test_records_come_back_in_order(tmp_path: Path) -> None:
    _journal(tmp_path / "j.log", 3)
    reading = journal.read(tmp_path / "j.log")
    assert reading.calls == [_call(0), _call(1), _call(2)] and reading.torn_bytes == 0


@pytest.mark.parametrize("cut_from_end", [1, 4, 7, 8, 9, 20])
def test_a_torn_last_record_is_dropped_whole(tmp_path: Path, cut_from_end: int) -> None:
    path = tmp_path / "j.log"
    _journal(path, 3)
    whole = path.read_bytes()
    path.write_bytes(whole[:-cut_from_end])
    reading = journal.read(path)
    assert reading.calls == [_call(0), _call(1)]
    assert reading.whole_bytes + reading.torn_bytes == len(whole) - cut_from_end
    j = journal.Journal(path, reading.whole_bytes, sync=False)  # reopened: the tail goes, appends follow
    j.append(_call(9))
    j.close()
    assert journal.read(path).calls == [_call(0), _call(1), _call(9)]


def test_a_corrupted_record_ends_the_reading(tmp_path: Path) -> None:
    path = tmp_path / "j.log"
    _journal(path, 3)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # the last record's payload: its checksum fails
    path.write_bytes(bytes(data))
    assert journal.read(path).calls == [_call(0), _call(1)]


def test_a_file_cut_in_its_magic_is_empty_and_another_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.log"
    path.write_bytes(journal.MAGIC[:5])
    assert journal.read(path) == journal.Reading([], 0, 5)
    path.write_bytes(b"not a journal at all")
    with pytest.raises(ValueError, match="not a Metro journal"):
        journal.read(path)
    assert journal.read(tmp_path / "missing.log") == journal.Reading([], 0, 0)


def test_snapshots_keep_locks_and_moto_lambda_factories() -> None:
    tags: defaultdict[str, defaultdict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    tags["arn"]["k"]["v"] = "x"
    snapshot._FACTORIES[tags.default_factory.__qualname__] = snapshot._nested_tags  # type: ignore[union-attr]
    try:
        state = {"lock": threading.RLock(), "plain": threading.Lock(), "tags": tags}
        buffer = io.BytesIO()
        snapshot._Pickler(buffer).dump(state)
        back = pickle.loads(buffer.getvalue())
    finally:
        del snapshot._FACTORIES[tags.default_factory.__qualname__]  # type: ignore[union-attr]
    assert back["tags"]["arn"]["k"] == {"v": "x"} and back["tags"]["new"]["k"] == {}
    with back["lock"], back["lock"]:  # reentrant, as it was
        pass
    assert back["plain"].acquire(blocking=False)


def test_an_unknown_lambda_factory_fails_the_snapshot() -> None:
    with pytest.raises(pickle.PicklingError, match="unknown lambda"):
        snapshot._Pickler(io.BytesIO()).dump(defaultdict(lambda: 0))


def _environ(target: str = "", method: str = "POST", path: str = "/", form: bool = False) -> dict[str, str]:
    env = {"REQUEST_METHOD": method, "PATH_INFO": path}
    if target:
        env["HTTP_X_AMZ_TARGET"] = target
    if form:
        env["CONTENT_TYPE"] = "application/x-www-form-urlencoded; charset=utf-8"
    return env


@pytest.mark.parametrize(("environ", "body", "kind"), [
    (_environ("DynamoDB_20120810.PutItem"), b"{}", classify.Kind.write),
    (_environ("DynamoDB_20120810.TransactWriteItems"), b"{}", classify.Kind.write),
    (_environ("DynamoDB_20120810.GetItem"), b"{}", classify.Kind.read),
    (_environ("DynamoDB_20120810.Query"), b"{}", classify.Kind.read),
    (_environ("DynamoDB_20120810.BatchGetItem"), b"{}", classify.Kind.read),
    (_environ("DynamoDBStreams_20120810.GetRecords"), b"{}", classify.Kind.read),
    (_environ("AmazonSQS.SendMessageBatch"), b"{}", classify.Kind.write),
    (_environ("AmazonSQS.DeleteMessageBatch"), b"{}", classify.Kind.write),
    (_environ("AmazonSQS.ReceiveMessage"), b"{}", classify.Kind.receive),
    (_environ("AmazonSQS.GetQueueAttributes"), b"{}", classify.Kind.read),
    (_environ(form=True), b"Action=ReceiveMessage&QueueUrl=x", classify.Kind.receive),
    (_environ(form=True), b"Action=ListQueues", classify.Kind.read),
    (_environ(form=True), b"Action=PutMetricData", classify.Kind.write),
    (_environ(method="PUT", path="/bucket/key"), b"x", classify.Kind.write),
    (_environ(method="DELETE", path="/bucket/key"), b"", classify.Kind.write),
    (_environ(method="GET", path="/bucket/key"), b"", classify.Kind.read),
    (_environ(method="HEAD", path="/bucket"), b"", classify.Kind.read),
    (_environ(path="/2015-03-31/functions/f/invocations"), b"{}", classify.Kind.read),
    (_environ(path="/2015-03-31/event-source-mappings/"), b"{}", classify.Kind.write),
])
def test_which_calls_change_state(environ: dict[str, str], body: bytes, kind: classify.Kind) -> None:
    assert classify.kind_of(environ, body) is kind


def test_a_long_poll_becomes_short_polls() -> None:
    wait, body = classify.receive_wait(_environ("AmazonSQS.ReceiveMessage"),
                                       json.dumps({"QueueUrl": "q", "WaitTimeSeconds": 5}).encode())
    assert wait == 5 and json.loads(body) == {"QueueUrl": "q", "WaitTimeSeconds": 0}
    wait, body = classify.receive_wait(_environ(form=True), b"Action=ReceiveMessage&WaitTimeSeconds=20&QueueUrl=q")
    assert wait == 20 and b"WaitTimeSeconds=0" in body and b"QueueUrl=q" in body
    assert classify.receive_wait(_environ("AmazonSQS.ReceiveMessage"), b'{"QueueUrl": "q"}')[0] == 0
    assert classify.receive_wait(_environ("AmazonSQS.ReceiveMessage"), b"not json") == (0, b"not json")
    assert classify.handed_out_messages(b'{"Messages": [{"ReceiptHandle": "h"}]}')
    assert not classify.handed_out_messages(b"{}")


def test_a_data_directory_has_one_user_and_reset_waits_for_it(tmp_path: Path) -> None:
    held = DataDir(tmp_path / "data", sync=False)
    with pytest.raises(DataDirInUse, match="in use by another Metro stack"):
        DataDir(tmp_path / "data", sync=False)
    with pytest.raises(DataDirInUse):
        wipe(tmp_path / "data")
    held.close()
    assert wipe(tmp_path / "data") and not (tmp_path / "data").exists()
    assert not wipe(tmp_path / "data")
