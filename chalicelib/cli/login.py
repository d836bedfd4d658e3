"""``metro login``: keep the URL, token and project in the config file (0600), so that later commands need
neither flags nor environment variables. ``METRO_URL``, ``METRO_TOKEN`` and ``METRO_PROJECT`` still win."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from chalicelib.cli import render, settings
from chalicelib.cli.context import UsageError, session


def login(ctx: typer.Context,
          url: Annotated[str | None, typer.Option("--url", help="Metro's REST endpoint")] = None,
          token: Annotated[str | None, typer.Option("--token", help="the token (visible to ps: prefer "
                                                                    "--token-stdin)")] = None,
          token_stdin: Annotated[bool, typer.Option("--token-stdin", help="read the token from stdin")] = False,
          project: Annotated[str | None, typer.Option("--project", help="the project of short ids")] = None,
          ) -> None:
    """Store the URL, token and project (given here, else the ones in effect now) in the config file."""
    if token is not None and token_stdin:
        raise UsageError("pass --token or --token-stdin, not both")
    if token_stdin:
        token = sys.stdin.readline().strip()
    s = session(ctx)
    values = {"url": url or s.settings.url, "token": token or s.settings.token,
              "project": project or s.settings.project}
    path = settings.config_path(s.runtime.environ)
    settings.write_config(path, values)
    what = ", ".join(k for k, v in values.items() if v)
    render.note(f"Stored {what} in {path} (mode 0600).")
