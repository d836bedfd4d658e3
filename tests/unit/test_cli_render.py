"""`metro`'s output: tables and JSON, and received messages' data as text when it is UTF-8, else base64."""

from __future__ import annotations

import base64
import json

import pytest

from chalicelib.cli import render
from chalicelib.cli.render import Format


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_data_is_text_when_utf8_else_base64() -> None:
    assert render.decode_data(_b64("héllo".encode())) == ("héllo", "utf-8")
    assert render.decode_data(_b64(b"\xff\x00\xfe")) == (_b64(b"\xff\x00\xfe"), "base64")
    assert render.decode_data(None) == ("", "utf-8")


def test_a_listing_as_a_table_and_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"name": "projects/p/topics/a", "labels": {"team": "x"}}, {"name": "projects/p/topics/b"}]
    columns = [("NAME", render.field("name")), ("LABELS", render.field("labels"))]
    render.listing(rows, columns, Format.table)
    out = capsys.readouterr().out
    assert "NAME" in out and "projects/p/topics/a" in out and "team=x" in out and "projects/p/topics/b" in out
    render.listing(rows, columns, Format.json)
    assert json.loads(capsys.readouterr().out) == rows


def test_an_empty_listing_prints_nothing_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    render.listing([], [("NAME", render.field("name"))], Format.table)
    out, err = capsys.readouterr()
    assert out == "" and "Listed 0 items" in err


def test_markup_in_values_is_printed_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    render.describe({"name": "[bold]x[/bold]", "nested": {"a": 1}}, Format.table)
    out = capsys.readouterr().out
    assert "[bold]x[/bold]" in out and '{"a":1}' in out


def test_received_messages_flattened() -> None:
    item = {"ackId": "a1", "deliveryAttempt": 2, "message": {"messageId": "7", "publishTime": "2026-01-01T00:00:00Z",
                                                             "data": _b64(b"\x80"), "attributes": {"k": "v"},
                                                             "orderingKey": "o"}}
    row = render.received(item)
    assert row == {"messageId": "7", "publishTime": "2026-01-01T00:00:00Z", "attributes": {"k": "v"},
                   "orderingKey": "o", "data": _b64(b"\x80"), "encoding": "base64", "ackId": "a1",
                   "deliveryAttempt": 2}
    data_cell = render.MESSAGE_COLUMNS[-1][1]
    assert data_cell(row) == "base64:" + _b64(b"\x80")


def test_cells_render_dotted_paths_lists_and_mappings() -> None:
    assert render.field("a.b")({"a": {"b": "c"}}) == "c"
    assert render.field("a.b")({"a": None}) is None
    assert render.text(["x", "y"]) == "x, y"
    assert render.text(None) == ""
    assert render.text(5) == "5"
