"""The IAM conformance gate of ``make test``: the calls the test run made, by acting function, against the
per-function policies infra/policies.py generates.

    python -m infra.iam_gate build/iam-calls     # exit 1 on any violation

The tests run with ``METRO_IAM_RECORD`` set, so every process appends its distinct AWS calls, labelled with the
function whose role makes them, to ``calls-<pid>.jsonl`` (chalicelib/store/call_record.py). For each function the
gate evaluates its stage ``dev`` policy (the ``Fn::Sub`` pseudo parameters filled in; fan-out's with the
on-failure destination grant infra/template.py adds) against the authorizations each call needs on AWS
(infra/iam_actions.py; the local names mapped onto the stage's by role) with infra/iam_eval.py, and fails on

* a call no statement allows (a wrong action or resource, a condition key that does not match, a resource-less
  action granted on something else than ``*``), including the ``s3:ListBucket`` that a GetObject or HeadObject
  answered NoSuchKey/404 implies: without it AWS answers 403 and code that reads 404 as "missing" breaks;
* a grant (statement, action, resource) that no call used, other than those :data:`EXEMPTIONS` declare: the calls
  AWS makes with the function's role on its behalf, which the local stack cannot show.

Calls labelled "" (the local emulator's bootstrap, a test's own calls) are not the functions' and are ignored.
The zero-unused check needs the whole suite's recording: a partial run reports the grants it did not reach.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra import policies, template
from infra.iam_actions import PLACEHOLDER, Names, Request, Unmapped, requests
from infra.iam_eval import Grant, Statement, evaluate, grants
from infra.names import FUNCTIONS

STAGE = "dev"
ANY = "*"  # an exemption for every function


@dataclass(frozen=True)
class Exemption:
    """An authorization AWS itself uses with the function's role; the gate asks for it as if it were a call."""

    function: str
    action: str
    resource: str  # with {log_group}, {stream}, {queue}, {dlq}, {import_stream}, {import_consumer} filled in
    reason: str


_RUNTIME_LOGS = "the Lambda runtime writes the function's logs with its role (not an SDK call of Metro's code)"
EXEMPTIONS: tuple[Exemption, ...] = (
    Exemption(ANY, "logs:CreateLogStream", "{log_group}:log-stream:" + PLACEHOLDER, _RUNTIME_LOGS),
    Exemption(ANY, "logs:PutLogEvents", "{log_group}:log-stream:" + PLACEHOLDER, _RUNTIME_LOGS),
    Exemption(ANY, "xray:PutTraceSegments", "*", "active tracing (infra/observability.py): the Lambda service "
              "sends the function's trace segments with its role, and refuses Tracing: Active to a role without"),
    Exemption(ANY, "xray:PutTelemetryRecords", "*", "active tracing, as above: the service's telemetry"),
    Exemption("fanout", "dynamodb:ListStreams", "*",
              "Lambda's DynamoDB stream mapping lists the table's streams with the function's role; the local "
              "pump finds the stream with DescribeTable instead (its own book-keeping, unlabelled)"),
    Exemption("fanout", "sqs:SendMessage", "{dlq}",
              "the stream mapping's on-failure destination (infra/template.py _grant_dlq): Lambda sends the "
              "records it gave up on to the FanoutFailures queue with the function's role; no local pump does"),
    *(Exemption("ingest", action, "{import_stream}", "Lambda's Kinesis mapping describes the stream with the "
                "function's role; the local ingest pump lists the shards instead") for action in
      ("kinesis:DescribeStream", "kinesis:DescribeStreamSummary")),
    Exemption("ingest", "kinesis:SubscribeToShard", "{import_consumer}",
              "a Kinesis mapping on an enhanced fan-out consumer subscribes to its shards with the function's role; "
              "the local pump reads shards with GetRecords"),
    Exemption("push", "sqs:GetQueueAttributes", "{queue}",
              "Lambda's SQS mapping reads the queue's attributes with the function's role (Lambda requires it "
              "with ReceiveMessage and DeleteMessage); the local push pump has no need to"),
)


@dataclass
class Finding:
    function: str
    what: str  # the call, or the grant
    detail: str


@dataclass
class Report:
    calls: int = 0
    ignored: int = 0
    violations: list[Finding] = field(default_factory=list)
    unused: list[Finding] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)

    @property
    def failed(self) -> bool:
        return bool(self.violations or self.unused)


def load(directory: Path) -> list[dict[str, Any]]:
    """Every distinct recorded call of the directory's files."""
    seen: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("calls-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                call = json.loads(line)
                seen.setdefault(json.dumps(call, sort_keys=True), call)
    return list(seen.values())


def _resolved(value: Any, names: Names, dlq: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {"Fn::Sub"}:
            return names.sub(value["Fn::Sub"])
        if set(value) == {"Fn::GetAtt"} and value["Fn::GetAtt"] == [template.DLQ_ID, "Arn"]:
            return dlq
        return {k: _resolved(v, names, dlq) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, names, dlq) for v in value]
    return value


def statements(function: str, names: Names) -> list[Statement]:
    """The function's role as deployed: its policy file, and for fan-out the template's DLQ grant."""
    doc = policies.policy(names.stage.stage, function)
    if function == "fanout":
        role: dict[str, Any] = {"Properties": {"Policies": [{"PolicyDocument": doc}]}}
        template._grant_dlq(role)
    resolved: list[Statement] = _resolved(doc["Statement"], names, names.arn("sqs", names.stage.dlq))
    return resolved


def exemptions(function: str, names: Names) -> list[tuple[Request, str]]:
    fields = {"log_group": names.arn("logs", f"log-group:/aws/lambda/{names.stage.function(function)}"),
              "stream": names.stream_arn(), "dlq": names.arn("sqs", names.stage.dlq),
              "queue": names.queue_arn(f"{names.local.queue_prefix}-{PLACEHOLDER}"),
              "import_stream": names.kinesis_arn(PLACEHOLDER),
              "import_consumer": names.kinesis_arn(f"{PLACEHOLDER}/consumer/{PLACEHOLDER}")}
    return [(Request(e.action, e.resource.format(**fields), why="exempt"), e.reason) for e in EXEMPTIONS
            if e.function in (ANY, function)]


def describe(call: Mapping[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted(call.get("params", {}).items()))
    return f"{call['service']} {call['operation']}({params}) -> {call.get('outcome', '?')}"


def _note(call: Mapping[str, Any], report: Report) -> None:
    if call["service"] == "ssm" and call["params"].get("WithDecryption"):
        report.notes.add("ssm GetParameters WithDecryption: the stage's SecureString parameters use the AWS managed "
                         "key aws/ssm (infra/secrets.py passes no KeyId), whose key policy lets SSM decrypt for any "
                         "caller allowed the parameter: no kms:Decrypt grant is needed. A customer managed key "
                         "would need kms:Decrypt on that key in every function's role.")


def check_function(function: str, calls: Iterable[Mapping[str, Any]], names: Names, report: Report,
                   exempt: bool = True) -> None:
    stmts = statements(function, names)
    used: set[Grant] = set()
    for call in calls:
        _note(call, report)
        try:
            needed = requests(call, names)
        except Unmapped as exc:
            report.violations.append(Finding(function, describe(call), f"no IAM mapping for {exc}"))
            continue
        for request in needed:
            decision = evaluate(stmts, request)
            used.update(decision.used)
            if not decision.allowed:
                why = f" ({request.why})" if request.why else ""
                report.violations.append(Finding(function, describe(call), f"not allowed: {request.action} on "
                                                 f"{request.resource} {dict(request.context) or ''}{why}"))
    for request, reason in exemptions(function, names) if exempt else []:
        decision = evaluate(stmts, request)
        used.update(decision.used)
        if not decision.allowed:
            report.violations.append(Finding(function, f"exempt {request.action} on {request.resource}",
                                             f"not allowed, but AWS needs it: {reason}"))
    for grant in grants(stmts):
        if grant not in used:
            report.unused.append(Finding(function, str(grant), "granted, but no call and no exemption used it"))


def check(calls: Sequence[Mapping[str, Any]], names: Names | None = None,
          functions: Sequence[str] = FUNCTIONS) -> Report:
    names = names or Names()
    report = Report(calls=len(calls))
    by_function: dict[str, list[Mapping[str, Any]]] = {f: [] for f in functions}
    for call in calls:
        function = call.get("function", "")
        if not function:
            report.ignored += 1
        elif function in by_function:
            by_function[function].append(call)
        else:
            report.violations.append(Finding(function, describe(call), "no such function (infra/names.FUNCTIONS)"))
    for function, theirs in by_function.items():
        check_function(function, theirs, names, report)
    return report


def render(report: Report, seconds: float) -> str:
    lines = [f"IAM gate: {report.calls} distinct calls recorded ({report.ignored} unlabelled, ignored); "
             f"{len(report.violations)} not allowed, {len(report.unused)} unused grants ({seconds:.2f} s)"]
    for title, findings in (("NOT ALLOWED", report.violations), ("UNUSED GRANT", report.unused)):
        for f in sorted(findings, key=lambda f: (f.function, f.what)):
            lines.append(f"  {title} [{f.function}] {f.what}\n      {f.detail}")
    lines += [f"  note: {n}" for n in sorted(report.notes)]
    lines.append("  exempt (AWS uses them with the function's role; the local stack cannot show them):")
    lines += [f"    [{e.function}] {e.action} on {e.resource}: {e.reason}" for e in EXEMPTIONS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Check recorded AWS calls against the per-function IAM policies.")
    p.add_argument("directory", type=Path, help="where the test run recorded (METRO_IAM_RECORD)")
    p.add_argument("--denied-only", action="store_true",
                   help="a partial run (the rehearsal's deployed functions): fail on calls not allowed only")
    args = p.parse_args(argv)
    started = time.perf_counter()
    calls = load(args.directory)
    if not calls:
        print(f"IAM gate: no recorded calls under {args.directory} (was METRO_IAM_RECORD set?)", file=sys.stderr)
        return 1
    report = check(calls)
    if args.denied_only:
        report.unused.clear()
    print(render(report, time.perf_counter() - started))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
