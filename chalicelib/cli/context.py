"""What every command shares: the session (settings and client) the root command builds, the ``--output`` and
``--body`` options, and the parsing of ``k=v`` options. Parsing mistakes are usage errors (exit 2)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer
from typer._click.exceptions import UsageError  # typer vendors click: its exceptions, not click's

from chalicelib.cli import names
from chalicelib.cli.client import Client, Transport, urllib_transport
from chalicelib.cli.render import Format
from chalicelib.cli.settings import Settings

__all__ = ["Body", "Labels", "Output", "Runtime", "Session", "UsageError", "body", "merged", "pairs", "session"]


@dataclass
class Runtime:
    """What the process gives the CLI; tests pass their own (``CliRunner().invoke(app, args, obj=Runtime(...))``)."""

    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    transport: Transport = urllib_transport
    sleep: Callable[[float], None] = time.sleep


@dataclass
class Session:
    runtime: Runtime
    settings: Settings
    command: str = "metro"  # the running command, gcloud's way (metro.topics.create), for error lines

    def client(self) -> Client:
        return Client(self.settings.url, self.settings.token, self.runtime.transport)

    def name(self, collection: str, value: str) -> str:
        return names.resolve(value, self.settings.project, collection)

    def project(self) -> str:
        return names.project_path(self.settings.project)


def session(ctx: typer.Context) -> Session:
    obj = ctx.find_object(Session)
    if obj is None:  # pragma: no cover - the root callback always sets one
        raise UsageError("metro's root command did not run")
    obj.command = ".".join(ctx.command_path.split())
    return obj


Output = Annotated[Format, typer.Option("--output", "-o", help="table or json", case_sensitive=False)]
Body = Annotated[str | None, typer.Option("--body", help="JSON object of further fields (the options win)")]
Labels = Annotated[list[str] | None, typer.Option("--label", help="KEY=VALUE (repeatable)")]


def pairs(values: Sequence[str] | None, option: str) -> dict[str, str]:
    """``["k=v", ...]`` -> ``{"k": "v"}``; a value without ``=`` is a usage error."""
    out: dict[str, str] = {}
    for value in values or ():
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {value!r}", param_hint=option)
        out[key] = rest
    return out


def body(text: str | None) -> dict[str, Any]:
    """``--body``: a JSON object, or {}."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as e:
        raise typer.BadParameter(f"not JSON: {e}", param_hint="--body") from e
    if not isinstance(value, dict):
        raise typer.BadParameter("a JSON object is expected", param_hint="--body")
    return value


def merged(base: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (``--body``) with the options' fields on top; nested objects are merged, unset options skipped."""
    out = dict(base)
    for key, value in fields.items():
        if value is None or value == {}:
            continue
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out
