"""What the CLI prints: tables (rich) or JSON (``--output json``), and received messages with their data as
text when it is UTF-8, else as base64."""

from __future__ import annotations

import base64
import binascii
import enum
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

Cell = Callable[[Mapping[str, Any]], Any]
Column = tuple[str, Cell]  # header, and how a row gives the cell


class Format(enum.StrEnum):
    table = "table"
    json = "json"


def console(stderr: bool = False) -> Console:
    """A console on the current stdout (or stderr): as wide as the terminal, wide enough not to fold otherwise."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 4096
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def show(renderable: RenderableType) -> None:
    """Print a table: as rich draws it on a terminal; else without trailing blanks, for scripts and pipes."""
    out = console()
    if out.is_terminal:
        out.print(renderable)
        return
    with out.capture() as captured:
        out.print(renderable)
    lines = [line.rstrip() for line in captured.get().splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    sys.stdout.write("".join(f"{line}\n" for line in lines))


def field(key: str) -> Cell:
    """The cell of a row's ``key`` (a dotted path reaches into objects)."""
    def cell(row: Mapping[str, Any]) -> Any:
        value: Any = row
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value
    return cell


def text(value: Any) -> str:
    """A cell's text: strings as they are, nothing as empty, mappings as k=v, the rest as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values()):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True) + "\n")


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[Column]) -> Table:
    out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for header, _ in columns:
        out.add_column(header, overflow="fold")
    for row in rows:
        out.add_row(*(Text(text(cell(row))) for _, cell in columns))
    return out


def listing(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], output: Format) -> None:
    """A listing: a table, or the JSON list of the items."""
    if output is Format.json:
        print_json(list(rows))
    elif rows:
        show(table(rows, columns))
    else:
        console(stderr=True).print("Listed 0 items.")


def describe(item: Mapping[str, Any], output: Format) -> None:
    """One resource: a two-column table of its fields, or its JSON."""
    if output is Format.json:
        print_json(item)
        return
    out = Table(box=None, show_header=False, pad_edge=False)
    out.add_column(style="bold")
    out.add_column(overflow="fold")
    for key, value in item.items():
        out.add_row(Text(key), Text(text(value)))
    show(out)


def decode_data(encoded: str | None) -> tuple[str, str]:
    """A message's data (base64 on the wire) as (text, "utf-8") when it is UTF-8, else (base64, "base64")."""
    if not encoded:
        return "", "utf-8"
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return encoded, "base64"
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"


def received(item: Mapping[str, Any]) -> dict[str, Any]:
    """A received message, flattened for printing."""
    message = item.get("message") or {}
    data, encoding = decode_data(message.get("data"))
    out = {"messageId": message.get("messageId", ""), "publishTime": message.get("publishTime", ""),
           "attributes": message.get("attributes") or {}, "orderingKey": message.get("orderingKey", ""),
           "data": data, "encoding": encoding, "ackId": item.get("ackId", "")}
    if "deliveryAttempt" in item:
        out["deliveryAttempt"] = item["deliveryAttempt"]
    return out


MESSAGE_COLUMNS: list[Column] = [
    ("MESSAGE_ID", field("messageId")), ("PUBLISH_TIME", field("publishTime")),
    ("ATTRIBUTES", field("attributes")), ("ORDERING_KEY", field("orderingKey")),
    ("DATA", lambda row: row["data"] if row["encoding"] == "utf-8" else f"base64:{row['data']}"),
]


def messages(items: Sequence[Mapping[str, Any]], output: Format) -> None:
    listing([received(i) for i in items], MESSAGE_COLUMNS, output)


def error(message: str) -> None:
    """An error line on stderr, as gcloud prints one."""
    console(stderr=True).print(Text(f"ERROR: {message}"))


def note(message: str) -> None:
    """A status line on stderr (stdout keeps only what a script reads)."""
    console(stderr=True).print(Text(message))
