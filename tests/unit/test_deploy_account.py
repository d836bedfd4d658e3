"""What the deploy decides from the account before deploying: reserved concurrency (infra/concurrency.py), the
region, and the stage data that ``destroy --delete-data`` finds (paged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from infra import concurrency, deploy, stage_data
from infra.names import StageNames

ROOT = Path(__file__).resolve().parents[2]


def test_a_big_account_reserves_maintenance_and_the_push_cap() -> None:
    found = concurrency.plan(concurrency.Account(1000, 1000), {}, 100)
    assert found.reservations == {"maintenance": 1, "push": 100} and not found.notes


def test_a_new_account_of_ten_reserves_nothing_and_says_why() -> None:
    found = concurrency.plan(concurrency.Account(10, 10), {}, 100)
    assert found.reservations == {}
    assert "limit is 10" in found.notes[0] and "quota" in found.notes[0].lower()


def test_the_push_cap_shrinks_to_leave_the_api_half_the_account() -> None:
    found = concurrency.plan(concurrency.Account(400, 400), {}, 300)
    assert found.reservations == {"maintenance": 1, "push": 199}  # 400 - 200 kept - 1
    assert "capped at 199" in found.notes[0]


def test_the_stages_own_reservations_count_as_available_again() -> None:
    # a redeploy: the account shows 101 unreserved because this stage already holds 1 + 100
    found = concurrency.plan(concurrency.Account(202, 101), {"maintenance": 1, "push": 100}, 100)
    assert found.reservations == {"maintenance": 1, "push": 100}


def test_other_stages_reservations_are_respected() -> None:
    found = concurrency.plan(concurrency.Account(1000, 520), {}, 100)  # others hold 480
    assert found.reservations["push"] == 19  # 520 - 500 kept - 1


def test_the_region_comes_from_the_session_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    assert deploy._region("") == "eu-central-1"
    assert deploy._region("ap-south-1") == "ap-south-1"
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    assert deploy._region("") == "eu-west-3"


def test_no_region_anywhere_is_refused_not_guessed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import typer

    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with pytest.raises(typer.Exit):
        deploy._region("")


def _client(service: str) -> Any:
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


def test_delete_data_pages_through_every_queue() -> None:
    sqs = _client("sqs")
    first = [f"https://sqs/1/metro-dev-{i}" for i in range(1000)]
    with Stubber(sqs) as stub:
        stub.add_response("list_queues", {"QueueUrls": first, "NextToken": "t"},
                          {"QueueNamePrefix": "metro-dev-", "MaxResults": 1000})
        stub.add_response("list_queues", {"QueueUrls": ["https://sqs/1/metro-dev-last"]},
                          {"QueueNamePrefix": "metro-dev-", "MaxResults": 1000, "NextToken": "t"})
        assert len(stage_data.queue_urls(sqs, "metro-dev-")) == 1001
        stub.assert_no_pending_responses()


def test_no_stage_is_served_under_a_stage_named_like_the_api_version() -> None:
    """A stage called v1 made the URLs /v1/v1/projects."""
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    for stage, settings in config["stages"].items():
        assert settings.get("api_gateway_stage", stage) != "v1", stage


def test_retained_dlqs_of_every_stack_share_the_prefix_delete_data_lists() -> None:
    from infra import template

    name = template._retained_name(StageNames("dev").dlq)
    assert name["Fn::Join"][1][0] == StageNames("dev").dlq
    assert not StageNames("dev").dlq.startswith(StageNames("dev").queue_prefix + "-")  # not a subscription queue
