"""``metro publish``, ``metro pull`` and ``metro seek``."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated, Any

import typer

from chalicelib.cli import render
from chalicelib.cli.context import Output, UsageError, pairs, session
from chalicelib.cli.render import Format

MAX_PULL = 1000


def message(data: bytes, attributes: dict[str, str], ordering_key: str | None) -> dict[str, Any]:
    """A PubsubMessage of the publish body."""
    out: dict[str, Any] = {"data": base64.b64encode(data).decode("ascii")}
    if attributes:
        out["attributes"] = attributes
    if ordering_key:
        out["orderingKey"] = ordering_key
    return out


def publish(ctx: typer.Context,
            topic: Annotated[str, typer.Argument(help="the topic's id or name", show_default=False)],
            data: Annotated[str | None, typer.Option("--data", "--message", help="the message's text")] = None,
            file: Annotated[Path | None, typer.Option(exists=True, dir_okay=False,
                                                      help="a file whose bytes are the message")] = None,
            attr: Annotated[list[str] | None, typer.Option(help="KEY=VALUE attribute (repeatable)")] = None,
            ordering_key: Annotated[str | None, typer.Option(help="the message's ordering key")] = None,
            output: Output = Format.table) -> None:
    """Publish one message (its text, or a file's bytes) with attributes and an ordering key."""
    if data is not None and file is not None:
        raise UsageError("pass --data or --file, not both")
    payload = file.read_bytes() if file is not None else (data or "").encode()
    s = session(ctx)
    full = s.name("topics", topic)
    answer = s.client().post(f"/v1/{full}:publish", {"messages": [message(payload, pairs(attr, "--attr"),
                                                                          ordering_key)]})
    ids = answer.get("messageIds") or []
    if output is Format.json:
        render.print_json({"messageIds": ids})
    else:
        for message_id in ids:
            typer.echo(message_id)


def pull(ctx: typer.Context,
         subscription: Annotated[str, typer.Argument(help="the subscription's id or name", show_default=False)],
         ack: Annotated[bool, typer.Option("--ack", "--auto-ack", help="acknowledge what was received")] = False,
         max_messages: Annotated[int, typer.Option("--max", "--limit", min=1, max=MAX_PULL,
                                                   help="at most this many messages")] = 1,
         wait: Annotated[bool, typer.Option("--wait", help="wait for messages (a long poll)")] = False,
         output: Output = Format.table) -> None:
    """Pull messages and print them: id, publish time, attributes, ordering key, data (text, or base64)."""
    s = session(ctx)
    full = s.name("subscriptions", subscription)
    client = s.client()
    answer = client.post(f"/v1/{full}:pull", {"maxMessages": max_messages, "returnImmediately": not wait})
    items = answer.get("receivedMessages") or []
    if ack and items:
        client.post(f"/v1/{full}:acknowledge", {"ackIds": [i["ackId"] for i in items]})
    render.messages(items, output)


def seek(ctx: typer.Context,
         subscription: Annotated[str, typer.Argument(help="the subscription's id or name", show_default=False)],
         time: Annotated[str | None, typer.Option("--time", help="an RFC 3339 time, 2026-01-02T03:04:05Z")] = None,
         snapshot: Annotated[str | None, typer.Option(help="the snapshot's id or name")] = None) -> None:
    """Seek a subscription to a time or to a snapshot."""
    if (time is None) == (snapshot is None):
        raise UsageError("pass exactly one of --time and --snapshot")
    s = session(ctx)
    full = s.name("subscriptions", subscription)
    target = {"time": time} if time is not None else {"snapshot": s.name("snapshots", snapshot or "")}
    answer = s.client().post(f"/v1/{full}:seek", target)
    render.note(f"Seeked [{full}] to {time or target['snapshot']}.")
    if answer:
        render.describe(answer, Format.table)

