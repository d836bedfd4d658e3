"""``metro snapshots``: list, describe, delete, and create from a subscription."""

from __future__ import annotations

from typing import Annotated

import typer

from chalicelib.cli import resources
from chalicelib.cli.context import Body, Labels, Output, body, merged, pairs, session
from chalicelib.cli.render import Format, field

SNAPSHOTS = resources.Kind("snapshots", "snapshot", [
    ("NAME", field("name")), ("TOPIC", field("topic")), ("EXPIRE_TIME", field("expireTime")),
])
app = resources.group(SNAPSHOTS, "Snapshots: list, create, describe, delete.")


@app.command()
def create(ctx: typer.Context,
           name: Annotated[str, typer.Argument(help="an id of the project, or projects/P/snapshots/ID")],
           subscription: Annotated[str | None, typer.Option(help="the subscription whose backlog it keeps")] = None,
           labels: Labels = None, extra: Body = None, output: Output = Format.table) -> None:
    """Create a snapshot of a subscription's backlog."""
    s = session(ctx)
    fields = {"subscription": s.name("subscriptions", subscription) if subscription else None,
              "labels": pairs(labels, "--label")}
    item = s.client().put(f"/v1/{s.name('snapshots', name)}", merged(body(extra), fields))
    resources.created(SNAPSHOTS, item, output)
