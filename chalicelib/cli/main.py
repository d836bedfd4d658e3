"""The ``metro`` command tree. Every group lives in its own module and is added here; a new command is one
more entry of ``GROUPS`` or ``COMMANDS``.

Exit codes follow gcloud's: 0 on success, 1 when Metro answers an error (its status and message are printed
from Google's envelope) or cannot be reached, 2 for a usage error (a bad option, name or ``--body``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from typer._click.core import Context
from typer.core import TyperGroup

from chalicelib.cli import (
    acl,
    init,
    login,
    messages,
    names,
    projects,
    render,
    republish,
    reset,
    schemas,
    settings,
    snapshots,
    subscriptions,
    topics,
    users,
)
from chalicelib.cli.client import ApiError
from chalicelib.cli.context import Runtime, Session, UsageError

API_ERROR_EXIT = 1


def _command_of(ctx: Context) -> str:
    return ctx.obj.command if isinstance(ctx.obj, Session) else "metro"


class MetroGroup(TyperGroup):
    """The root group: turns an API error into gcloud's ``ERROR: ...`` line and exit 1, and a bad name into a
    usage error (exit 2), whichever command raised it."""

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except ApiError as e:
            render.error(f"({_command_of(ctx)}) {e.status}: {e.message}")
            raise typer.Exit(API_ERROR_EXIT) from e
        except settings.ConfigError as e:
            render.error(f"({_command_of(ctx)}) {e}")
            raise typer.Exit(API_ERROR_EXIT) from e
        except names.BadName as e:
            raise UsageError(str(e)) from e


app = typer.Typer(name="metro", cls=MetroGroup, no_args_is_help=True, pretty_exceptions_enable=False,
                  add_completion=False, context_settings={"help_option_names": ["-h", "--help"]},
                  help="Metro's command line: topics, subscriptions, messages, and keys mode's users, projects and "
                       "ACLs, over Metro's REST API.")


@app.callback()
def root(ctx: typer.Context,
         url: Annotated[str | None, typer.Option("--url", help="Metro's REST endpoint (env METRO_URL; default "
                                                               "http://127.0.0.1:$METRO_PORT, 8085)")] = None,
         token: Annotated[str | None, typer.Option("--token", help="the token (env METRO_TOKEN)")] = None,
         project: Annotated[str | None, typer.Option("--project", help="the project of short ids "
                                                                       "(env METRO_PROJECT)")] = None) -> None:
    runtime = ctx.obj if isinstance(ctx.obj, Runtime) else Runtime()
    ctx.obj = Session(runtime, settings.resolve(runtime.environ, {"url": url, "token": token, "project": project}))


GROUPS: list[tuple[str, typer.Typer]] = [
    ("topics", topics.app), ("subscriptions", subscriptions.app), ("snapshots", snapshots.app),
    ("schemas", schemas.app), ("users", users.app), ("projects", projects.app), ("acl", acl.app),
]
COMMANDS: list[Callable[..., None]] = [messages.publish, messages.pull, messages.seek, republish.republish,
                                       login.login, init.init, reset.reset]

for _name, _group in GROUPS:
    app.add_typer(_group, name=_name)
for _function in COMMANDS:
    app.command()(_function)


def run() -> None:
    """The console script ``metro`` (pyproject.toml) and ``python -m chalicelib.cli``."""
    app(prog_name="metro")
