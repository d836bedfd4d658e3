"""parliament (duo-labs' IAM linter) over every function's policy as deployed (the pseudo parameters filled in,
fan-out's DLQ grant added: infra/iam_gate.statements) and over the gRPC edge task's: no finding of severity
MEDIUM or above. A finding deliberately accepted is listed in IGNORED with its reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra import grpc_stack, iam_gate, policies
from infra.iam_actions import Names
from infra.names import FUNCTIONS, StageNames

parliament = pytest.importorskip("parliament")

FAILING = {"MEDIUM", "HIGH", "CRITICAL"}
# (issue, text in its detail): why it is accepted. Nothing at MEDIUM or above is, today; LOW findings pass, among
# them MISMATCHED_TYPE_BUT_USABLE for ``StringEquals`` on ``lambda:FunctionArn`` (an ARN-typed key: AWS's own
# examples compare it with StringEquals) and RESOURCE_STAR for the actions that have no resource type.
IGNORED: dict[tuple[str, str], str] = {}


def findings(statements: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    doc = json.dumps({"Version": "2012-10-17", "Statement": statements})
    out = []
    for finding in parliament.analyze_policy_string(doc).findings:
        enhanced = parliament.enhance_finding(finding)
        detail = json.dumps(enhanced.detail, default=str)
        if enhanced.severity in FAILING and not any(
                issue == enhanced.issue and text in detail for issue, text in IGNORED):
            out.append((enhanced.issue, enhanced.severity, detail))
    return out


@pytest.mark.parametrize(("stage", "function"), [(s, f) for s in policies.STAGES for f in FUNCTIONS])
def test_parliament_finds_nothing_medium_or_worse(stage: str, function: str) -> None:
    names = Names(stage=StageNames(stage))
    assert findings(iam_gate.statements(function, names)) == []


@pytest.mark.parametrize("stage", policies.STAGES)
def test_the_grpc_edge_task_policy_lints_clean(stage: str) -> None:
    names = Names(stage=StageNames(stage))
    task = iam_gate._resolved(grpc_stack.task_policy(stage)["Statement"], names, "")
    assert findings(task) == []


def test_parliament_does_flag_what_it_should() -> None:
    """A positive control: the resource-less dynamodb:ListStreams granted on a stream ARN (as fan-out's policy
    had it) is a MEDIUM finding."""
    stream = "arn:aws:dynamodb:us-east-1:123456789012:table/metro-dev-messages/stream/*"
    found = findings([{"Effect": "Allow", "Action": ["dynamodb:ListStreams"], "Resource": [stream]}])
    assert [issue for issue, _, _ in found] == ["RESOURCE_MISMATCH"]
