"""``metro users``: AMS's users (keys mode; the service admin's routes). A user has roles per project
(``project_admin``, ``publisher``, ``consumer``) or the service-wide ``service_admin``; the answer that creates
a user (or refreshes its token) is the only one that shows its token."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from chalicelib.cli import render
from chalicelib.cli.context import Body, Output, Session, body, merged, session
from chalicelib.cli.render import Format, field

app = typer.Typer(help="Users and their roles per project (keys mode, service admin).", no_args_is_help=True)
User = Annotated[str, typer.Argument(help="the user's name", show_default=False)]
TokenOnly = Annotated[bool, typer.Option("--token-only", help="print only the token")]


def _projects(row: Mapping[str, Any]) -> str:
    return "; ".join(f"{p.get('project')}: {', '.join(p.get('roles') or [])}" for p in row.get("projects") or [])


COLUMNS: list[render.Column] = [("NAME", field("name")), ("EMAIL", field("email")), ("PROJECTS", _projects),
                                ("SERVICE_ROLES", field("service_roles")), ("CREATED", field("created_on"))]


def project_roles(s: Session, roles: Sequence[str] | None) -> list[dict[str, Any]]:
    """``--role PROJECT=ROLE`` (or ``--role ROLE`` in the session's project) -> AMS's ``projects`` entries."""
    found: dict[str, list[str]] = {}
    for value in roles or ():
        project, sep, role = value.rpartition("=")
        if not sep:
            project = s.project().removeprefix("projects/")
        if not project or not role:
            raise typer.BadParameter(f"expected PROJECT=ROLE or ROLE, got {value!r}", param_hint="--role")
        found.setdefault(project, [])
        if role not in found[project]:
            found[project].append(role)
    return [{"project": p, "roles": r} for p, r in found.items()]


def _shown(user: Mapping[str, Any], token_only: bool, output: Format) -> None:
    if token_only:
        typer.echo(user.get("token", ""))
    else:
        render.describe(user, output)


@app.command()
def create(ctx: typer.Context, name: User,
           role: Annotated[list[str] | None, typer.Option(help="PROJECT=ROLE, or ROLE in --project (repeatable); "
                                                               "project_admin, publisher or consumer")] = None,
           service_admin: Annotated[bool, typer.Option("--service-admin", help="the service-wide role")] = False,
           email: Annotated[str | None, typer.Option()] = None,
           extra: Body = None, token_only: TokenOnly = False, output: Output = Format.table) -> None:
    """Create a user; its token is shown once."""
    s = session(ctx)
    fields: dict[str, Any] = {"projects": project_roles(s, role) or None, "email": email,
                              "service_roles": ["service_admin"] if service_admin else None}
    _shown(s.client().post(f"/v1/users/{name}", merged(body(extra), fields)), token_only, output)


@app.command("refresh-token")
def refresh_token(ctx: typer.Context, name: User, token_only: TokenOnly = False,
                  output: Output = Format.table) -> None:
    """Give a user a new token (the old one stops working)."""
    _shown(session(ctx).client().post(f"/v1/users/{name}:refreshToken"), token_only, output)


@app.command("list")
def list_(ctx: typer.Context, output: Output = Format.table) -> None:
    """List the users."""
    render.listing(list(session(ctx).client().pages("/v1/users", "users")), COLUMNS, output)


@app.command()
def describe(ctx: typer.Context, name: User, output: Output = Format.table) -> None:
    """Show a user (the name profile: the caller)."""
    render.describe(session(ctx).client().get(f"/v1/users/{name}"), output)


@app.command()
def delete(ctx: typer.Context, name: User) -> None:
    """Delete a user (its token stops working)."""
    session(ctx).client().delete(f"/v1/users/{name}")
    render.note(f"Deleted user [{name}].")
