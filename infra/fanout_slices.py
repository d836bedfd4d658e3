"""The fan-out function's slices of a wide topic (docs/decisions/wide-fanout.md), in the app template.

The stream handler invokes its own function asynchronously, one event per slice (chalicelib/store/fanout_slices.py).
What the template adds for that:

* ``METRO_FANOUT_FUNCTION``, the function's own name, in its environment (what the slices invoke);
* an ``AWS::Lambda::EventInvokeConfig``: Lambda retries a failed slice twice, drops one older than an hour (the
  maintenance catch-up fans its request out again long before: its log item is still unfanned), and sends the
  slices it gave up on to the fan-out failures queue, whose depth alarm an operator watches already.

The grants (infra/policies.py): ``lambda:InvokeFunction`` on the function itself, ``dynamodb:UpdateItem`` on the
resources table (the slices' completion item), and ``sqs:SendMessage`` on the failures queue, which the stream
mapping's destination needs already. Pure, like infra/template.py.
"""

from __future__ import annotations

from typing import Any

from infra.names import StageNames

INVOKE_CONFIG_ID = "FanoutSliceInvokeConfig"
SLICE_RETRIES = 2  # Lambda's most for an asynchronous invocation
SLICE_MAX_AGE_S = 3600


def add(resources: dict[str, Any], names: StageNames, function_id: str, dlq_id: str) -> None:
    """The slices' settings on the fan-out function ``function_id``, failures to the queue ``dlq_id``."""
    props = resources[function_id]["Properties"]
    props.setdefault("Environment", {}).setdefault("Variables", {})["METRO_FANOUT_FUNCTION"] = names.function("fanout")
    resources[INVOKE_CONFIG_ID] = {
        "Type": "AWS::Lambda::EventInvokeConfig",
        "Properties": {
            "FunctionName": {"Ref": function_id},
            "Qualifier": "$LATEST",
            "MaximumRetryAttempts": SLICE_RETRIES,
            "MaximumEventAgeInSeconds": SLICE_MAX_AGE_S,
            "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq_id, "Arn"]}}},
        },
    }
