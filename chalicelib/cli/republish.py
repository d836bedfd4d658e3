"""``metro republish``: AMS's republisher. It consumes a subscription and publishes each message, with its
attributes and ordering key, to every ``--to`` topic, and acknowledges a batch only after every publish of it
succeeded: at-least-once (a crash or an interruption between the publishes and the acknowledgement means the
batch comes again, and is published again). A failed publish nacks the batch and stops with exit 1."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Annotated, Any

import typer

from chalicelib.cli import render
from chalicelib.cli.client import ApiError, Client
from chalicelib.cli.context import UsageError, session

MAX_REQUEST_BYTES = 9 * 1024 * 1024  # below Google's 10 MB publish request
MAX_REQUEST_MESSAGES = 1000


def copy(item: dict[str, Any]) -> dict[str, Any]:
    """The message to publish again: data, attributes and ordering key (ids and times are the new topic's)."""
    message = item.get("message") or {}
    return {k: message[k] for k in ("data", "attributes", "orderingKey") if message.get(k)}


def requests(messages: Sequence[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """The messages in order, cut into publish requests within Google's limits."""
    batch: list[dict[str, Any]] = []
    size = 0
    for message in messages:
        weight = len(json.dumps(message))
        if batch and (size + weight > MAX_REQUEST_BYTES or len(batch) >= MAX_REQUEST_MESSAGES):
            yield batch
            batch, size = [], 0
        batch.append(message)
        size += weight
    if batch:
        yield batch


def forward(client: Client, source: str, items: Sequence[dict[str, Any]], targets: Sequence[str]) -> None:
    """Publish ``items`` to every target, then acknowledge them; on a failed publish, nack them and re-raise."""
    ack_ids = [i["ackId"] for i in items]
    messages = [copy(i) for i in items]
    try:
        for target in targets:
            for request in requests(messages):
                client.post(f"/v1/{target}:publish", {"messages": request})
    except ApiError:
        with contextlib.suppress(ApiError):  # redelivered now rather than after the ack deadline
            client.post(f"/v1/{source}:modifyAckDeadline", {"ackIds": ack_ids, "ackDeadlineSeconds": 0})
        raise
    client.post(f"/v1/{source}:acknowledge", {"ackIds": ack_ids})


def republish(ctx: typer.Context,
              subscription: Annotated[str, typer.Argument(help="the subscription to consume", show_default=False)],
              to: Annotated[list[str], typer.Option("--to", help="a topic to publish to (repeatable)",
                                                    show_default=False)],
              max_messages: Annotated[int | None, typer.Option("--max", min=1,
                                                               help="stop after this many messages")] = None,
              until_empty: Annotated[bool, typer.Option("--until-empty",
                                                    help="stop when a pull waits and finds nothing")] = False,
              batch: Annotated[int, typer.Option(min=1, max=1000, help="messages per pull")] = 100) -> None:
    """Consume a subscription and publish every message to other topics, acking after they all took it."""
    s = session(ctx)
    source = s.name("subscriptions", subscription)
    targets = list(dict.fromkeys(s.name("topics", t) for t in to))
    client = s.client()
    if client.get(f"/v1/{source}").get("topic") in targets:
        raise UsageError("a --to topic is the subscription's own topic: that would loop")
    done = 0
    try:
        while max_messages is None or done < max_messages:
            want = batch if max_messages is None else min(batch, max_messages - done)
            answer = client.post(f"/v1/{source}:pull", {"maxMessages": want, "returnImmediately": False})
            items = answer.get("receivedMessages") or []
            if not items:
                if until_empty:
                    break
                continue
            forward(client, source, items, targets)
            done += len(items)
            render.note(f"republished {len(items)} ({done} in all)")
    except KeyboardInterrupt:
        render.note("interrupted")
    render.note(f"Republished {done} messages from [{source}] to {', '.join(targets)}.")
