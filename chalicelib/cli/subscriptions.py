"""``metro subscriptions``: list, describe, delete, and create with the Subscription's fields as options."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from chalicelib.cli import resources
from chalicelib.cli.context import Body, Labels, Output, Session, body, merged, pairs, session
from chalicelib.cli.render import Format, field

SUBSCRIPTIONS = resources.Kind("subscriptions", "subscription", [
    ("NAME", field("name")), ("TOPIC", field("topic")), ("ACK_DEADLINE", field("ackDeadlineSeconds")),
    ("PUSH_ENDPOINT", field("pushConfig.pushEndpoint")), ("FILTER", field("filter")),
])
app = resources.group(SUBSCRIPTIONS, "Subscriptions: list, create, describe, delete.")


def _dead_letter(s: Session, topic: str | None, attempts: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if topic:
        out["deadLetterTopic"] = s.name("topics", topic)
    if attempts is not None:
        out["maxDeliveryAttempts"] = attempts
    return out


@app.command()
def create(ctx: typer.Context,
           name: Annotated[str, typer.Argument(help="an id of the project, or projects/P/subscriptions/ID")],
           topic: Annotated[str | None, typer.Option(help="the topic's id or name")] = None,
           ack_deadline: Annotated[int | None, typer.Option(help="seconds")] = None,
           push_endpoint: Annotated[str | None, typer.Option(help="a push subscription's URL")] = None,
           message_filter: Annotated[str | None, typer.Option("--filter")] = None,
           ordering: Annotated[bool | None, typer.Option("--enable-message-ordering", show_default=False)] = None,
           exactly_once: Annotated[bool | None, typer.Option("--enable-exactly-once-delivery",
                                                             show_default=False)] = None,
           retain_acked: Annotated[bool | None, typer.Option("--retain-acked-messages", show_default=False)] = None,
           retention: Annotated[str | None, typer.Option("--message-retention-duration", help="e.g. 600s")] = None,
           dead_letter_topic: Annotated[str | None, typer.Option(help="the topic's id or name")] = None,
           max_delivery_attempts: Annotated[int | None, typer.Option()] = None,
           labels: Labels = None, extra: Body = None, output: Output = Format.table) -> None:
    """Create a subscription."""
    s = session(ctx)
    fields: dict[str, Any] = {
        "topic": s.name("topics", topic) if topic else None, "ackDeadlineSeconds": ack_deadline,
        "pushConfig": {"pushEndpoint": push_endpoint} if push_endpoint else None, "filter": message_filter,
        "enableMessageOrdering": ordering, "enableExactlyOnceDelivery": exactly_once,
        "retainAckedMessages": retain_acked, "messageRetentionDuration": retention,
        "deadLetterPolicy": _dead_letter(s, dead_letter_topic, max_delivery_attempts),
        "labels": pairs(labels, "--label"),
    }
    item = s.client().put(f"/v1/{s.name('subscriptions', name)}", merged(body(extra), fields))
    resources.created(SUBSCRIPTIONS, item, output)
