"""``metro reset``: wipe the local stack's durable state (docs/local-state.md). It works on this machine's
directory, not over the API, and refuses while a stack is using it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chalicelib.cli import render
from chalicelib.cli.context import session
from chalicelib.local.durable.data_dir import DataDirInUse, wipe

DEFAULT_DATA_DIR = ".metro/data"  # `make run`'s (Makefile)


def reset(ctx: typer.Context,
          data_dir: Annotated[str | None, typer.Option(
              "--data-dir", help="the state's directory (env METRO_DATA_DIR; default .metro/data)")] = None,
          yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False) -> None:
    """Wipe the local stack's state: every project, user, topic, subscription, schema, snapshot and message."""
    chosen = data_dir or session(ctx).runtime.environ.get("METRO_DATA_DIR") or DEFAULT_DATA_DIR
    path = Path(chosen).expanduser().resolve()
    if not path.exists():
        render.note(f"Nothing to reset: {path} does not exist.")
        return
    if not yes and not typer.confirm(f"Wipe Metro's local state in {path}?"):
        raise typer.Exit(1)
    try:
        wipe(path)
    except DataDirInUse as exc:
        render.error(f"(metro.reset) {exc}")
        raise typer.Exit(1) from exc
    render.note(f"Wiped {path}: the next start begins empty.")
