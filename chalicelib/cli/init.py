"""``metro init FILE``: apply a declaration file (the METRO_INIT format, docs/init.md) to a running Metro, over
its API (``POST /v1/declaration``, service admin): checked whole, then applied idempotently."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml

from chalicelib.cli import render
from chalicelib.cli.context import Output, UsageError, session


def init(ctx: typer.Context,
         file: Annotated[Path, typer.Argument(help="a YAML or JSON declaration (docs/init.md)")],
         output: Output = render.Format.table) -> None:
    """Create what a declaration file names (projects, users, schemas, topics, subscriptions, ACLs), idempotently."""
    try:
        document = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UsageError(f"{file}: cannot be read as YAML or JSON ({exc})") from exc
    answer = session(ctx).client().post("/v1/declaration", document or {})
    if output is render.Format.json:
        render.print_json(answer)
        return
    for line in answer.get("applied", []):
        print(line)
    for line in answer.get("notUpdated", []):
        print(f"{line}: NOT UPDATED")
    for entry in answer.get("tokens", []):  # shown here once: Metro keeps only their hashes
        print(f"user {entry['user']}'s token (shown once, keep it): {entry['token']}")
