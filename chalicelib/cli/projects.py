"""``metro projects``: AMS's projects (keys mode; creating and deleting them is the service admin's)."""

from __future__ import annotations

from typing import Annotated

import typer

from chalicelib.cli import names, render
from chalicelib.cli.context import Output, session
from chalicelib.cli.render import Format, field

app = typer.Typer(help="Projects (keys mode, service admin).", no_args_is_help=True)
Project = Annotated[str, typer.Argument(help="the project's id", show_default=False)]
COLUMNS: list[render.Column] = [("NAME", field("name")), ("DESCRIPTION", field("description")),
                                ("CREATED_BY", field("created_by")), ("CREATED", field("created_on"))]


def _path(project: str) -> str:
    return f"/v1/{names.project_path(project)}"


@app.command()
def create(ctx: typer.Context, name: Project,
           description: Annotated[str | None, typer.Option()] = None, output: Output = Format.table) -> None:
    """Create a project."""
    answer = session(ctx).client().post(_path(name), {"description": description} if description else {})
    render.note(f"Created project [{name}].")
    render.describe(answer, output)


@app.command("list")
def list_(ctx: typer.Context, output: Output = Format.table) -> None:
    """List the projects."""
    render.listing(list(session(ctx).client().pages("/v1/projects", "projects")), COLUMNS, output)


@app.command()
def describe(ctx: typer.Context, name: Project, output: Output = Format.table) -> None:
    """Show a project."""
    render.describe(session(ctx).client().get(_path(name)), output)


@app.command()
def delete(ctx: typer.Context, name: Project) -> None:
    """Delete a project and everything in it."""
    session(ctx).client().delete(_path(name))
    render.note(f"Deleted project [{name}].")
