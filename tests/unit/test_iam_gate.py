"""The IAM gate of ``make test`` (infra/iam_gate.py): hand-made recordings and policies that must pass and must
fail for each of its rules, the recorder's lines (chalicelib/store/call_record.py), and the regressions it
found in the generated policies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chalicelib.store import call_record
from infra import iam_gate
from infra.iam_actions import Names, Request, requests
from infra.iam_eval import evaluate, wildcard

NAMES = Names()
BUCKET = "arn:aws:s3:::metro-dev-123456789012-us-east-1"
PUSH = "arn:aws:lambda:us-east-1:123456789012:function:metro-dev-push"
QUEUES = "arn:aws:sqs:us-east-1:123456789012:metro-dev-*"


def call(service: str, operation: str, outcome: str = "ok", function: str = "api_handler",
         **params: Any) -> dict[str, Any]:
    return {"function": function, "service": service, "operation": operation, "params": params, "outcome": outcome}


def allow(sid: str, actions: list[str], resources: list[str],
          condition: dict[str, Any] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}
    if condition:
        st["Condition"] = condition
    return st


def run(calls: list[dict[str, Any]], statements: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
        exemptions: tuple[iam_gate.Exemption, ...] = ()) -> iam_gate.Report:
    monkeypatch.setattr(iam_gate, "statements", lambda function, names: statements)
    monkeypatch.setattr(iam_gate, "EXEMPTIONS", exemptions)
    return iam_gate.check(calls, NAMES, functions=("api_handler",))


def test_a_call_its_statement_allows_passes_and_uses_the_grant(monkeypatch: pytest.MonkeyPatch) -> None:
    report = run([call("sqs", "SendMessageBatch", Queue="metro-abc-1")], [allow("Q", ["sqs:SendMessage"], [QUEUES])],
                 monkeypatch)
    assert not report.failed, iam_gate.render(report, 0)


def test_a_denied_action_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    report = run([call("sqs", "DeleteQueue", Queue="metro-abc-1"), call("sqs", "SendMessage", Queue="metro-abc-1")],
                 [allow("Q", ["sqs:SendMessage"], [QUEUES])], monkeypatch)
    assert [f.detail.split(" on ")[0] for f in report.violations] == ["not allowed: sqs:DeleteQueue"]
    assert not report.unused


def test_a_wrong_resource_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    table = "arn:aws:dynamodb:us-east-1:123456789012:table/metro-dev-resources"
    report = run([call("dynamodb", "GetItem", TableName="metro-leases"), call("dynamodb", "GetItem",
                                                                             TableName="metro-resources")],
                 [allow("T", ["dynamodb:GetItem"], [table])], monkeypatch)
    assert len(report.violations) == 1 and "table/metro-dev-leases" in report.violations[0].detail


def test_an_index_query_needs_the_index_arn(monkeypatch: pytest.MonkeyPatch) -> None:
    table = "arn:aws:dynamodb:us-east-1:123456789012:table/metro-dev-resources"
    q = call("dynamodb", "Query", TableName="metro-resources", IndexName="by-topic")
    assert run([q], [allow("T", ["dynamodb:Query"], [table])], monkeypatch).violations
    assert not run([q], [allow("T", ["dynamodb:Query"], [table + "/index/*"])], monkeypatch).failed


def test_transactions_need_each_item_action(monkeypatch: pytest.MonkeyPatch) -> None:
    table = "arn:aws:dynamodb:us-east-1:123456789012:table/metro-dev-resources"
    tx = call("dynamodb", "TransactWriteItems", Items=[["ConditionCheck", "metro-resources"],
                                                       ["Put", "metro-resources"]])
    report = run([tx], [allow("T", ["dynamodb:PutItem"], [table])], monkeypatch)
    assert [v.detail.split(" on ")[0] for v in report.violations] == ["not allowed: dynamodb:ConditionCheckItem"]


def test_a_condition_key_that_does_not_match_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    create = allow("C", ["lambda:CreateEventSourceMapping"], ["*"], {"StringEquals": {"lambda:FunctionArn": PUSH}})
    ok = call("lambda", "CreateEventSourceMapping", FunctionName="metro-dev-push", EventSourceArn="q")
    other = call("lambda", "CreateEventSourceMapping", FunctionName="someone-else", EventSourceArn="q")
    assert not run([ok], [create], monkeypatch).failed
    assert run([other], [create], monkeypatch).violations


def test_a_resourceless_action_is_allowed_only_on_star(monkeypatch: pytest.MonkeyPatch) -> None:
    listing = call("lambda", "ListEventSourceMappings", FunctionName="metro-dev-push")
    on_arn = allow("L", ["lambda:ListEventSourceMappings"], ["arn:aws:lambda:us-east-1:123456789012:*"])
    report = run([listing], [on_arn], monkeypatch)
    assert report.violations and report.unused  # the grant on an ARN can never be used
    assert not run([listing], [allow("L", ["lambda:ListEventSourceMappings"], ["*"])], monkeypatch).failed


def test_a_missing_object_is_a_404_only_with_list_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    read = allow("R", ["s3:GetObject"], [BUCKET + "/raw/*"])
    missing = call("s3", "GetObject", "NoSuchKey", Bucket="metro-messages", Key="raw/")
    head_missing = call("s3", "HeadObject", "404", Bucket="metro-messages", Key="raw/")
    report = run([missing, head_missing], [read], monkeypatch)
    assert len(report.violations) == 2 and all("s3:ListBucket" in v.detail for v in report.violations)
    listing = allow("L", ["s3:ListBucket"], [BUCKET], {"StringLike": {"s3:prefix": ["raw/*"]}})
    assert not run([missing, head_missing], [read, listing], monkeypatch).failed
    other_prefix = allow("L", ["s3:ListBucket"], [BUCKET], {"StringLike": {"s3:prefix": ["archive/*"]}})
    assert run([missing], [read, other_prefix], monkeypatch).violations
    found = call("s3", "GetObject", Bucket="metro-messages", Key="raw/")
    assert run([found], [read, listing], monkeypatch).unused  # an object that exists needs no ListBucket


def test_a_listing_carries_its_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    listing = allow("L", ["s3:ListBucket"], [BUCKET], {"StringLike": {"s3:prefix": ["archive/*"]}})
    assert not run([call("s3", "ListObjectsV2", Bucket="b", Prefix="archive/")], [listing], monkeypatch).failed
    assert run([call("s3", "ListObjectsV2", Bucket="b", Prefix="raw/")], [listing], monkeypatch).violations
    assert run([call("s3", "ListObjectsV2", Bucket="b")], [listing], monkeypatch).violations  # no prefix at all


def test_an_unused_grant_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    report = run([call("sqs", "SendMessage", Queue="metro-abc-1")],
                 [allow("Q", ["sqs:SendMessage", "sqs:PurgeQueue"], [QUEUES])], monkeypatch)
    assert [u.what for u in report.unused] == [f"Q: sqs:PurgeQueue on {QUEUES}"]


def test_a_service_side_exemption_uses_its_grant_and_must_be_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    group = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/lambda/metro-dev"
    logs = allow("Logs", ["logs:PutLogEvents"], [group + ":*"])
    exempt = (iam_gate.Exemption("*", "logs:PutLogEvents", "{log_group}:log-stream:x", "the runtime"),)
    assert run([], [logs], monkeypatch).unused
    assert not run([], [logs], monkeypatch, exempt).failed
    assert run([], [], monkeypatch, exempt).violations  # AWS needs it, the role lacks it


def test_unlabelled_calls_are_ignored_and_unknown_functions_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    report = run([call("sqs", "DeleteQueue", function="", Queue="x"), call("sqs", "SendMessage", function="web")],
                 [], monkeypatch)
    assert report.ignored == 1 and len(report.violations) == 1 and "no such function" in report.violations[0].detail


def test_deny_wins_and_wildcards_follow_iam_case_rules() -> None:
    req = Request("S3:GetObject", BUCKET + "/raw/x")
    assert evaluate([allow("A", ["s3:get*"], [BUCKET + "/raw/*"])], req).allowed  # actions: any case
    assert not evaluate([allow("A", ["s3:GetObject"], [BUCKET + "/RAW/*"])], req).allowed  # resources: exact case
    deny = {"Sid": "D", "Effect": "Deny", "Action": "s3:*", "Resource": "*"}
    assert not evaluate([allow("A", ["s3:GetObject"], ["*"]), deny], req).allowed
    assert wildcard("a?c*", "abcdef") and not wildcard("a[b]c", "abc")


def test_local_names_map_onto_the_stage_by_role() -> None:
    assert requests(call("sqs", "GetQueueUrl", Queue="metro-health-probe"), NAMES)[0].resource == \
        "arn:aws:sqs:us-east-1:123456789012:metro-dev-health-probe"
    assert requests(call("lambda", "Invoke", FunctionName="metro-dev-seek_worker"), NAMES)[0].resource.endswith(
        ":function:metro-dev-seek_worker")
    assert requests(call("ssm", "GetParameters", Names=["/metro-test/admin-key"]), NAMES)[0].resource == \
        "arn:aws:ssm:us-east-1:123456789012:parameter/metro-dev/admin-key"
    tables = {r.resource.rsplit("/", 1)[-1] for r in requests(
        call("dynamodb", "BatchWriteItem", Tables=["metro-leases", "metro-messages"]), NAMES)}
    assert tables == {"metro-dev-leases", "metro-dev-messages"}


def test_the_recorder_writes_each_distinct_call_once(tmp_path: Path) -> None:
    recorder = call_record.CallRecorder(str(tmp_path))
    with call_record.acting_as("push"):
        for _ in range(3):
            recorder.record("s3", "GetObject", {"Bucket": "b", "Key": "raw/p/t/1.mpub"}, "ok")
        recorder.record("s3", "GetObject", {"Bucket": "b", "Key": "raw/p/t/2.mpub"}, "NoSuchKey")
        carried = call_record.carry(call_record.current_function)
    assert call_record.current_function() == "" and carried() == "push"
    lines = [json.loads(line) for f in tmp_path.glob("calls-*.jsonl") for line in f.read_text().splitlines()]
    assert lines == [{"function": "push", "service": "s3", "operation": "GetObject", "outcome": "ok",
                      "params": {"Bucket": "b", "Key": "raw/"}},
                     {"function": "push", "service": "s3", "operation": "GetObject", "outcome": "NoSuchKey",
                      "params": {"Bucket": "b", "Key": "raw/"}}]
    assert iam_gate.load(tmp_path) == lines


def test_the_recorder_never_fails_a_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a directory cannot be made under a file
    monkeypatch.setattr(call_record._Installed, "recorder", call_record.CallRecorder(str(blocked / "sub")))
    monkeypatch.setattr(call_record._Installed, "resolved", True)  # restored after the test (make test records)
    call_record.record("s3", "GetObject", {"Bucket": "b"}, 200, {})
    assert call_record.outcome(404, {"Error": {"Code": "NoSuchKey"}}) == "NoSuchKey"
    assert call_record.outcome(403, {}) == "403" and call_record.outcome(200, None) == "ok"


# -- regressions the gate found in the generated policies (infra/policies.py) -----------------------------------------
@pytest.mark.parametrize("prefix", ["raw/", "archive/", "metrics/"])
def test_the_api_role_reads_and_lists_the_prefixes_it_reads(prefix: str) -> None:
    """A missing body, archive manifest or metrics summary must be a 404 (the stores read NoSuchKey as "missing"):
    the API had s3:GetObject without s3:ListBucket, and nothing at all on metrics/ (the :metrics routes answered
    503 on AWS)."""
    api = iam_gate.statements("api_handler", NAMES)
    missing = call("s3", "GetObject", "NoSuchKey", Bucket="metro-messages", Key=prefix)
    for request in requests(missing, NAMES):
        assert evaluate(api, request).allowed, request
    report = iam_gate.Report()
    iam_gate.check_function("api_handler", [missing], NAMES, report, exempt=False)
    assert report.violations == []
    assert not evaluate(api, Request("s3:ListBucket", BUCKET, (("s3:prefix", "leases/x"),))).allowed


def test_the_generated_roles_allow_what_the_gate_found_missing() -> None:
    fanout, maintenance = iam_gate.statements("fanout", NAMES), iam_gate.statements("maintenance", NAMES)
    messages = "arn:aws:dynamodb:us-east-1:123456789012:table/metro-dev-messages"
    assert evaluate(fanout, Request("dynamodb:UpdateItem", messages)).allowed  # marking an entry fanned out
    assert evaluate(fanout, Request("dynamodb:ListStreams", "*")).allowed  # the stream mapping's, on "*" only
    assert evaluate(maintenance, Request("dynamodb:Query", messages + "/index/unfanned")).allowed  # the catch-up
    assert not evaluate(maintenance, Request("dynamodb:Query", messages + "/index/other")).allowed
