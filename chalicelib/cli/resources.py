"""The commands every resource group shares: ``list``, ``describe`` and ``delete`` of topics, subscriptions,
snapshots and schemas. Each group's module adds its own ``create`` (the Google resource's fields as options)."""

# No `from __future__ import annotations`: typer reads the commands' annotations, and ``Name`` is local.
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from chalicelib.cli import names, render
from chalicelib.cli.context import Output, session
from chalicelib.cli.render import Column, Format


@dataclass(frozen=True)
class Kind:
    collection: str  # "topics": the URL's collection and the listing's key
    singular: str  # "topic"
    columns: Sequence[Column]
    describe_query: Mapping[str, str] | None = None


def name_column(row: Mapping[str, Any]) -> Any:
    return row.get("name", "")


def group(kind: Kind, help_text: str) -> typer.Typer:
    """A command group with list/describe/delete for ``kind``."""
    app = typer.Typer(help=help_text, no_args_is_help=True)
    name_help = f"the {kind.singular}: an id of the project, or projects/P/{kind.collection}/ID"
    Name = Annotated[str, typer.Argument(help=name_help, show_default=False)]

    @app.command("list")
    def list_(ctx: typer.Context, output: Output = Format.table) -> None:
        """List the project's resources."""
        s = session(ctx)
        rows = list(s.client().pages(f"/v1/{s.project()}/{kind.collection}", kind.collection))
        render.listing(rows, kind.columns, output)

    @app.command()
    def describe(ctx: typer.Context, name: Name, output: Output = Format.table) -> None:
        """Show one resource."""
        s = session(ctx)
        render.describe(s.client().get(f"/v1/{s.name(kind.collection, name)}", kind.describe_query), output)

    @app.command()
    def delete(ctx: typer.Context, name: Name) -> None:
        """Delete one resource."""
        s = session(ctx)
        full = s.name(kind.collection, name)
        s.client().delete(f"/v1/{full}")
        render.note(f"Deleted {kind.singular} [{full}].")

    return app


def created(kind: Kind, item: Mapping[str, Any], output: Format) -> None:
    """What a create prints: a note, then the resource."""
    render.note(f"Created {kind.singular} [{item.get('name', '')}].")
    render.describe(item, output)


def short_names(values: Any) -> str:
    return ", ".join(names.short(v) for v in values or ())
