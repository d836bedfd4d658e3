"""End to end: the real local stack over HTTP, then the Spark jobs on its emulator.

10,000 messages go in through the API in 1,000 publish requests (1,000 raw objects). A compaction
is killed (SIGKILL, the whole process group: driver, JVM, Python workers) right after it has written
its parquet parts, then run again; the archive must hold every message exactly once with its bytes,
the topic's object count must drop at least 100x, and a further run must change no object. Pulls of
messages not acked yet must still return their bodies once the raw objects are gone (the stack
keeps every body in S3: METRO_INLINE_MAX_BYTES=0), and so must a replay. Last, the metrics job and
the ``:metrics`` endpoints.

To keep moto's SQS quick (a receive scans the whole queue), only the last 10 requests (100 messages)
are published after a subscription exists; the replay re-enqueues about a hundred messages.
"""

from __future__ import annotations

import base64
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import boto3
import pytest
import requests

from chalicelib.core.replay import archive_layout as layout
from spark_emr import compact, lock, metrics, replay, submit
from tests.spark.helpers import archive_view, list_keys, snapshot
from tests.stack import ROOT, RunningStack, start_stack

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]  # the module fixtures publish and compact

PROJECT = "pipeline"
TOPIC = f"projects/{PROJECT}/topics/events"
BUCKET = "metro-messages"  # the stack's default configuration
REQUESTS = 1000
PER_REQUEST = 10
LATE_REQUESTS = 10  # published after the subscription "late" exists
WAIT = 180.0
FAKE_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled"}


@dataclass
class Published:
    stack: RunningStack
    bodies: dict[str, bytes]
    attributes: dict[str, dict[str, str]]
    late_ids: set[str]


def api(stack: RunningStack, method: str, path: str, body: Any = None) -> requests.Response:
    resp = requests.request(method, f"{stack.url}/v1/{path}", json=body, timeout=60)
    assert resp.status_code < 500, resp.text
    return resp


def ok(resp: requests.Response) -> Any:
    assert resp.status_code == 200, resp.text
    return resp.json()


def metric(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    found = [m["timeseries"] for m in doc["metrics"] if m["metric"] == name]
    assert len(found) == 1, doc
    return list(found[0])


def undelivered(stack: RunningStack, sub: str) -> int:
    doc = ok(api(stack, "GET", f"projects/{PROJECT}/subscriptions/{sub}:metrics"))
    return int(metric(doc, "subscription.number_of_undelivered_messages")[0]["value"])


def wait_for(what: str, check: Any, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("pipeline") / "metro.log", {"METRO_INLINE_MAX_BYTES": "0"})
    yield running
    running.stop()


@pytest.fixture
def on_stack(stack: RunningStack, monkeypatch: pytest.MonkeyPatch) -> RunningStack:
    """Point this test's AWS calls (and the jobs' tasks) at the stack's emulator."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", stack.emulator_url)
    return stack


@pytest.fixture(scope="module")
def published(stack: RunningStack) -> Published:
    ok(api(stack, "PUT", f"projects/{PROJECT}/topics/events"))
    rng = random.Random(6)
    batches = [
        [{"data": rng.randbytes(rng.randrange(1, 400)), "parity": ("even", "odd")[i % 2]} for i in range(PER_REQUEST)]
        for _ in range(REQUESTS)
    ]

    def publish(batch: list[dict[str, Any]]) -> list[tuple[str, bytes, dict[str, str]]]:
        body = {"messages": [{"data": base64.b64encode(m["data"]).decode(), "attributes": {"parity": m["parity"]}}
                             for m in batch]}
        ids = ok(api(stack, "POST", f"projects/{PROJECT}/topics/events:publish", body))["messageIds"]
        assert len(ids) == len(batch)
        return [(mid, m["data"], {"parity": m["parity"]}) for mid, m in zip(ids, batch)]

    out: list[tuple[str, bytes, dict[str, str]]] = []
    early = REQUESTS - LATE_REQUESTS
    with ThreadPoolExecutor(4) as pool:
        for done, result in enumerate(pool.map(publish, batches[:early]), 1):
            out.extend(result)
            if done % 250 == 0:
                print(f"published {done} requests", file=sys.stderr, flush=True)
    ok(api(stack, "PUT", f"projects/{PROJECT}/subscriptions/late", {"topic": TOPIC, "ackDeadlineSeconds": 600}))
    late: set[str] = set()
    for batch in batches[early:]:
        result = publish(batch)
        out.extend(result)
        late.update(mid for mid, _, _ in result)
    # fan-out reads the raw objects: wait until it has enqueued the late messages
    wait_for("fan-out of the late messages", lambda: undelivered(stack, "late") == len(late))
    bodies = {mid: data for mid, data, _ in out}
    assert len(bodies) == REQUESTS * PER_REQUEST
    return Published(stack, bodies, {mid: attrs for mid, _, attrs in out}, late)


def s3_client(stack: RunningStack) -> Any:
    return boto3.client("s3", endpoint_url=stack.emulator_url, region_name="us-east-1")


def kill_compaction_after_write(stack: RunningStack, log: Path) -> int:
    """Run compaction as its own process group and SIGKILL it when it reports its parts written."""
    env = {**os.environ, "AWS_ENDPOINT_URL": stack.emulator_url, "PYSPARK_PYTHON": sys.executable}
    cmd = [sys.executable, "-m", "spark_emr.compact", "--master", "local[2]", "--bucket", BUCKET,
           "--min-age-seconds", "0", "--json"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        seen: queue.Queue[str] = queue.Queue()

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                out.write(line)
                if "compact: wrote " in line:  # parts are in S3, the manifest is not yet
                    os.killpg(proc.pid, signal.SIGKILL)
                    seen.put(line)
                    return
            seen.put("")

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            line = seen.get(timeout=240)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert line, f"compaction ended without writing parts:\n{log.read_text()[-3000:]}"
    return proc.returncode


@pytest.fixture(scope="module")
def compacted(published: Published, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Killed compaction, then a complete run (in this process, on the shared local[2] session)."""
    stack = published.stack
    env = {**FAKE_AWS, "AWS_ENDPOINT_URL": stack.emulator_url}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # module scope: the per-test aws_env fixture has not run yet
    try:
        s3 = s3_client(stack)
        raw_before = list_keys(s3, BUCKET, layout.raw_topic_prefix(TOPIC))
        rc = kill_compaction_after_write(stack, tmp_path_factory.mktemp("killed") / "compact.log")
        seen_killed, bodies_killed = archive_view(s3, BUCKET, TOPIC)
        with pytest.raises(lock.LockHeld):  # the killed run still holds the maintenance lock...
            compact.compact(spark, BUCKET, min_age_seconds=0)
        after_lease = time.time() + lock.DEFAULT_LEASE_SECONDS + 1  # ...until its lease has ended
        report = compact.compact(spark, BUCKET, min_age_seconds=0, now=after_lease)
        after = list_keys(s3, BUCKET)
        state = snapshot(s3, BUCKET)
        again = compact.compact(spark, BUCKET, min_age_seconds=0, now=after_lease)
        return {"raw_before": raw_before, "killed_rc": rc, "killed_view": (seen_killed, bodies_killed),
                "report": report, "after": after, "state": state, "again": again,
                "state_again": snapshot(s3, BUCKET), "view": archive_view(s3, BUCKET, TOPIC)}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_killed_and_rerun_compaction_archives_every_message_once(published: Published,
                                                                 compacted: dict[str, Any]) -> None:
    expected = published.bodies
    assert len(compacted["raw_before"]) == REQUESTS
    assert compacted["killed_rc"] == -signal.SIGKILL
    seen, bodies = compacted["killed_view"]  # what a reader sees between the kill and the re-run
    assert set(seen) == set(expected) and set(seen.values()) == {1} and bodies == expected

    report = compacted["report"]
    assert report["messages"] == len(expected)
    seen, bodies = compacted["view"]
    assert set(seen) == set(expected), "every message is archived"
    assert set(seen.values()) == {1}, "no message is archived twice"
    assert bodies == expected, "the archive holds the published bytes"

    after = compacted["after"]
    assert not [k for k in after if k.startswith(layout.RAW_PREFIX)]
    topic_objects = [k for k in after if k.startswith(layout.archive_topic_prefix(TOPIC))]
    assert topic_objects and len(compacted["raw_before"]) / len(topic_objects) >= 100, topic_objects
    assert compacted["again"]["hours"] == 0 and compacted["again"]["raw_objects_deleted"] == 0
    assert compacted["state_again"] == compacted["state"], "a further run changes no object"


def test_pull_after_compaction_reads_bodies_from_the_archive(published: Published,
                                                             compacted: dict[str, Any]) -> None:
    stack = published.stack
    assert not [k for k in compacted["after"] if k.startswith(layout.RAW_PREFIX)]
    got: dict[str, bytes] = {}
    deadline = time.monotonic() + WAIT
    while len(got) < len(published.late_ids) and time.monotonic() < deadline:
        resp = ok(api(stack, "POST", f"projects/{PROJECT}/subscriptions/late:pull",
                      {"maxMessages": 50, "returnImmediately": True}))
        received = resp.get("receivedMessages", [])
        for r in received:
            m = r["message"]
            got[m["messageId"]] = base64.b64decode(m.get("data", ""))
            assert m.get("attributes") == published.attributes[m["messageId"]]
        if received:
            ok(api(stack, "POST", f"projects/{PROJECT}/subscriptions/late:acknowledge",
                   {"ackIds": [r["ackId"] for r in received]}))
    assert set(got) == published.late_ids
    assert got == {mid: published.bodies[mid] for mid in published.late_ids}
    wait_for("the acks", lambda: undelivered(stack, "late") == 0)


def test_replay_after_compaction(published: Published, compacted: dict[str, Any], on_stack: RunningStack,
                                 spark: Any) -> None:
    stack = on_stack
    ok(api(stack, "PUT", f"projects/{PROJECT}/subscriptions/replayed",
           {"topic": TOPIC, "ackDeadlineSeconds": 600, "filter": 'attributes.parity = "even"'}))
    ids = sorted(published.bodies)
    start_ms, end_ms = int(ids[4000][:13]), int(ids[4200][:13])
    expected = {m for m in ids if start_ms <= int(m[:13]) < end_ms and published.attributes[m]["parity"] == "even"}
    assert 50 <= len(expected) <= 500
    # the arguments `make replay SUBSCRIPTION=...` resolves: topic, queue URL, the subscription's filter
    args = submit.replay_args(["--subscription", f"projects/{PROJECT}/subscriptions/replayed"])
    opts = dict(zip(args[::2], args[1::2]))
    assert opts["--topic"] == TOPIC and opts["--filter"] == 'attributes.parity = "even"'
    report = replay.replay(spark, BUCKET, TOPIC, datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc),
                           datetime.fromtimestamp(end_ms / 1000, tz=timezone.utc), opts["--queue-url"],
                           filter_text=opts["--filter"])
    assert report["raw_objects"] == 0 and report["archive_files"] >= 1
    got: dict[str, bytes] = {}
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        resp = ok(api(stack, "POST", f"projects/{PROJECT}/subscriptions/replayed:pull",
                      {"maxMessages": 100, "returnImmediately": True}))
        received = resp.get("receivedMessages", [])
        if not received and len(got) >= len(expected):
            break
        for r in received:
            got[r["message"]["messageId"]] = base64.b64decode(r["message"].get("data", ""))
        if received:
            ok(api(stack, "POST", f"projects/{PROJECT}/subscriptions/replayed:acknowledge",
                   {"ackIds": [r["ackId"] for r in received]}))
    assert report["sent"] == len(expected)
    assert set(got) == expected
    assert got == {mid: published.bodies[mid] for mid in expected}


def test_metrics_job_and_endpoints(published: Published, compacted: dict[str, Any], on_stack: RunningStack,
                                   spark: Any) -> None:
    stack = on_stack
    assert api(stack, "GET", f"projects/{PROJECT}/topics/nothing:metrics").status_code == 404
    assert api(stack, "GET", f"projects/{PROJECT}/subscriptions/nothing:metrics").status_code == 404
    assert api(stack, "POST", f"projects/{PROJECT}/topics/events:metrics").status_code == 404
    assert api(stack, "GET", f"projects/{PROJECT}/topics/events:metricz").status_code == 404
    empty = ok(api(stack, "GET", "projects/no-such-project:metrics"))  # no resources, no summary: zeros
    assert metric(empty, "project.number_of_topics")[0]["value"] == 0
    assert metric(empty, "project.number_of_messages")[0]["value"] == 0

    report = metrics.metrics(spark, BUCKET, project=PROJECT)
    total_bytes = sum(len(b) for b in published.bodies.values())
    assert report["messages"] == len(published.bodies) and report["bytes"] == total_bytes

    topic = ok(api(stack, "GET", f"projects/{PROJECT}/topics/events:metrics"))
    assert metric(topic, "topic.number_of_messages")[0]["value"] == len(published.bodies)
    assert metric(topic, "topic.number_of_bytes")[0]["value"] == total_bytes
    assert sum(p["value"] for p in metric(topic, "topic.number_of_daily_messages")) == len(published.bodies)
    subs = ok(api(stack, "GET", f"projects/{PROJECT}/subscriptions")).get("subscriptions", [])
    assert metric(topic, "topic.number_of_subscriptions")[0]["value"] == len(subs) >= 1
    project = ok(api(stack, "GET", f"projects/{PROJECT}:metrics"))
    assert metric(project, "project.number_of_topics")[0]["value"] == 1
    assert metric(project, "project.number_of_subscriptions")[0]["value"] == len(subs)
    assert metric(project, "project.number_of_messages")[0]["value"] == len(published.bodies)
    assert sum(p["value"] for p in metric(project, "project.number_of_daily_messages")) == len(published.bodies)
    sub = ok(api(stack, "GET", f"projects/{PROJECT}/subscriptions/late:metrics"))
    assert sub["metrics"][0]["resource_type"] == "subscription" and sub["metrics"][0]["resource_name"] == "late"
