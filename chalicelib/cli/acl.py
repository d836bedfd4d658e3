"""``metro acl``: AMS's access lists of topics and subscriptions (``:acl``, ``:modifyAcl``): the users who may
publish to a topic, or consume from a subscription, besides the project's admins."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from chalicelib.cli import render
from chalicelib.cli.context import Output, UsageError, session
from chalicelib.cli.render import Format


class Kind(enum.StrEnum):
    topic = "topic"
    subscription = "subscription"


app = typer.Typer(help="Access lists of topics and subscriptions (keys mode).", no_args_is_help=True)
KindArg = Annotated[Kind, typer.Argument(help="topic or subscription", show_default=False)]
Name = Annotated[str, typer.Argument(help="its id or name", show_default=False)]


def _show(names: list[str], output: Format) -> None:
    if output is Format.json:
        render.print_json({"authorized_users": names})
    else:
        for name in names:
            typer.echo(name)


@app.command()
def get(ctx: typer.Context, kind: KindArg, name: Name, output: Output = Format.table) -> None:
    """Print the users on a topic's or subscription's ACL."""
    s = session(ctx)
    full = s.name(f"{kind.value}s", name)
    _show(list(s.client().get(f"/v1/{full}:acl").get("authorized_users") or []), output)


@app.command("set")
def set_(ctx: typer.Context, kind: KindArg, name: Name,
         user: Annotated[list[str] | None, typer.Option(help="a user (repeatable); the list replaces the ACL")] = None,
         clear: Annotated[bool, typer.Option("--clear", help="empty the ACL")] = False,
         output: Output = Format.table) -> None:
    """Replace the ACL of a topic or subscription."""
    if bool(user) == clear:
        raise UsageError("pass --user (repeatable) or --clear")
    s = session(ctx)
    full = s.name(f"{kind.value}s", name)
    client = s.client()
    client.post(f"/v1/{full}:modifyAcl", {"authorized_users": list(user or [])})
    render.note(f"Set the ACL of [{full}].")
    _show(list(client.get(f"/v1/{full}:acl").get("authorized_users") or []), output)
