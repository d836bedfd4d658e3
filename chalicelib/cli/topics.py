"""``metro topics``: list, describe, delete, and create with the Topic's fields as options."""

from __future__ import annotations

from typing import Annotated

import typer

from chalicelib.cli import resources
from chalicelib.cli.context import Body, Labels, Output, body, merged, pairs, session
from chalicelib.cli.render import Format, field

TOPICS = resources.Kind("topics", "topic", [
    ("NAME", field("name")), ("LABELS", field("labels")), ("SCHEMA", field("schemaSettings.schema")),
    ("RETENTION", field("messageRetentionDuration")),
])
app = resources.group(TOPICS, "Topics: list, create, describe, delete.")


@app.command()
def create(ctx: typer.Context,
           name: Annotated[str, typer.Argument(help="an id of the project, or projects/P/topics/ID")],
           labels: Labels = None,
           retention: Annotated[str | None, typer.Option("--message-retention-duration",
                                                         help="e.g. 600s")] = None,
           schema: Annotated[str | None, typer.Option(help="the schema's id or name")] = None,
           encoding: Annotated[str | None, typer.Option("--message-encoding", help="JSON or BINARY")] = None,
           kms_key: Annotated[str | None, typer.Option("--kms-key-name")] = None,
           extra: Body = None, output: Output = Format.table) -> None:
    """Create a topic."""
    s = session(ctx)
    full = s.name("topics", name)
    settings = {"schema": s.name("schemas", schema) if schema else None, "encoding": encoding}
    fields = {"labels": pairs(labels, "--label"), "messageRetentionDuration": retention, "kmsKeyName": kms_key,
              "schemaSettings": {k: v for k, v in settings.items() if v}}
    resources.created(TOPICS, s.client().put(f"/v1/{full}", merged(body(extra), fields)), output)
