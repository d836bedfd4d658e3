"""Functional tests: the real handlers and stores against moto in-process (no HTTP, no subprocess)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from chalicelib.config import Config
from chalicelib.delivery.fanout import FanOut
from chalicelib.delivery.push import PushDelivery
from chalicelib.local.bootstrap import bootstrap
from chalicelib.local.moto_fixes import fix_moto
from chalicelib.runtime import Services
from chalicelib.service.context import Context
from chalicelib.service.seek_worker import SeekWorker
from chalicelib.store import aws, call_record


class FakeClock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="session", autouse=True)
def moto_as_metro_runs_it() -> None:
    """The moto fixes Metro applies wherever it starts moto (local/moto_fixes.py), for every test: patched
    once per process, so without this a test would see them or not depending on which tests ran before it."""
    fix_moto()


# The use cases the functions' handlers run (delivery/event_handlers.py), which these tests call directly: each runs
# as its function, unless a caller already acts as one (maintenance's fan-out catch-up runs FanOut as maintenance),
# so that the IAM gate of `make test` sees their calls under the function that makes them (infra/iam_gate.py).
_ACTING = ((FanOut, "handle", "fanout"), (FanOut, "catch_up", "maintenance"), (PushDelivery, "handle", "push"),
           (SeekWorker, "handle", "seek_worker"), (SeekWorker, "resume_stalled", "maintenance"))


@pytest.fixture(autouse=True)
def use_cases_act_as_their_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    for owner, name, function in _ACTING:
        original = getattr(owner, name)

        def acting(*args: Any, _original: Any = original, _function: str = function, **kwargs: Any) -> Any:
            if call_record.current_function():
                return _original(*args, **kwargs)
            with call_record.acting_as(_function):
                return _original(*args, **kwargs)

        monkeypatch.setattr(owner, name, acting)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def services(clock: FakeClock) -> Iterator[Services]:
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled", "METRO_PULL_WAIT_SECONDS": "0",
           "METRO_PULL_LINGER_MS": "0", "METRO_DIRECT_FANOUT": "0"}
    saved = {k: os.environ.get(k) for k in [*env, "AWS_ENDPOINT_URL"]}
    os.environ.update(env)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    # The boto3 clients stay cached between tests (by service, region and endpoint, here none): moto's mock
    # intercepts every client while it is active, and building clients is most of a test's setup time.
    with mock_aws():
        config = Config()
        bootstrap(config)
        yield Services.build(Context.from_config(config, clock=clock))
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def stream_event(services: Services) -> dict[str, Any]:
    """Read every record of the messages table's stream, shaped as Lambda delivers them."""
    cfg = services.ctx.config
    streams = aws.client("dynamodbstreams", cfg)
    arn = aws.client("dynamodb", cfg).describe_table(TableName=cfg.messages_table)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        it = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                        ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        records += streams.get_records(ShardIterator=it, Limit=1000)["Records"]
    return {"Records": [{**r, "eventSourceARN": arn} for r in records]}
