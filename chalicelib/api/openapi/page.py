"""``/openapi.json`` and ``/docs``: Metro's OpenAPI description (api/openapi/description.py) and a self-contained
HTML page rendered from it on the server (no scripts, styles or fonts from elsewhere: it works on a closed
network)."""

from __future__ import annotations

import functools
import json
from html import escape
from typing import Any

from chalice.app import Response

from chalicelib.api.http import guarded
from chalicelib.api.methods import Method
from chalicelib.api.openapi import description

_STYLE = ("body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
          "code{background:#f4f4f4;padding:0 .2em}td{padding:.2em .6em;vertical-align:top}"
          ".m{font-weight:bold;font-family:monospace}details{margin:.2em 0}pre{background:#f8f8f8;padding:.5em}")


def _schema_link(name: str | None) -> str:
    return f'<a href="#schema-{escape(name)}">{escape(name)}</a>' if name else ""


def _rows(methods: tuple[Method, ...], tag: str) -> str:
    rows = []
    for op in methods:
        if op.tag != tag:
            continue
        auth = "public" if op.public else "token"
        rows.append(f'<tr><td class="m">{op.http}</td><td><code>{escape(op.url)}</code></td>'
                    f"<td>{escape(op.summary)}</td><td>{_schema_link(op.body)}</td>"
                    f"<td>{_schema_link(op.answer) if op.answer != 'Text' else escape(op.content)}</td>"
                    f"<td>{auth}</td></tr>")
    return "".join(rows)


def _schemas(doc: dict[str, Any]) -> str:
    parts = []
    for name, schema in sorted(doc["components"]["schemas"].items()):
        text = escape(json.dumps(schema, indent=1))
        parts.append(f'<details id="schema-{escape(name)}"><summary>{escape(name)}</summary><pre>{text}</pre>'
                     "</details>")
    return "".join(parts)


@functools.cache
def page(methods: tuple[Method, ...]) -> str:
    doc = description.document(methods)
    tags = list(dict.fromkeys(op.tag for op in methods))
    head = "<tr><th>method</th><th>path</th><th>what</th><th>body</th><th>answer</th><th>auth</th></tr>"
    sections = "".join(f"<h2>{escape(tag)}</h2><table>{head}{_rows(methods, tag)}</table>" for tag in tags)
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{escape(description.TITLE)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{escape(description.TITLE)}</h1>"
            f"<p>{escape(doc['info']['description'])} The machine-readable description: "
            '<a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). A token goes in <code>x-api-key</code>, '
            "<code>Authorization: Bearer</code> or the <code>key</code> query parameter (keys mode). Errors answer "
            f"with the statuses {', '.join(description.ERRORS)}.</p>{sections}<h2>Schemas</h2>{_schemas(doc)}"
            "</body></html>")


def spec(methods: tuple[Method, ...]) -> Response:
    return guarded(lambda: Response(body=description.document_json(methods), status_code=200,
                                    headers={"Content-Type": "application/json"}))


def docs(methods: tuple[Method, ...]) -> Response:
    return guarded(lambda: Response(body=page(methods), status_code=200,
                                    headers={"Content-Type": "text/html; charset=utf-8"}))
