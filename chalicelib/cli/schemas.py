"""``metro schemas``: list, describe, delete, and create from a definition (text or file)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chalicelib.cli import names, resources
from chalicelib.cli.context import Body, Output, UsageError, body, merged, session
from chalicelib.cli.render import Format, field

SCHEMAS = resources.Kind("schemas", "schema", [
    ("NAME", field("name")), ("TYPE", field("type")), ("REVISION_ID", field("revisionId")),
], describe_query={"view": "FULL"})
app = resources.group(SCHEMAS, "Schemas: list, create, describe, delete.")


@app.command()
def create(ctx: typer.Context,
           name: Annotated[str, typer.Argument(help="an id of the project, or projects/P/schemas/ID")],
           schema_type: Annotated[str | None, typer.Option("--type",
                                                           help="AVRO, PROTOCOL_BUFFER or JSON")] = None,
           definition: Annotated[str | None, typer.Option(help="the definition's text")] = None,
           definition_file: Annotated[Path | None, typer.Option(exists=True, dir_okay=False,
                                                                help="a file holding the definition")] = None,
           extra: Body = None, output: Output = Format.table) -> None:
    """Create a schema with its first revision."""
    if definition is not None and definition_file is not None:
        raise UsageError("pass --definition or --definition-file, not both")
    s = session(ctx)
    full = s.name("schemas", name)
    text = definition_file.read_text() if definition_file is not None else definition
    fields = {"type": schema_type.upper() if schema_type else None, "definition": text}
    item = s.client().post(f"/v1/projects/{names.project_of(full)}/schemas", merged(body(extra), fields),
                           query={"schemaId": names.short(full)})
    resources.created(SCHEMAS, item, output)
