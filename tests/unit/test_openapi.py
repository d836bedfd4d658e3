"""The OpenAPI description (api/openapi/description.py) against the routes: it is derived from the method registry
(api/registry.py), so every route of app.py and every (method, verb) of the permission table has exactly
one operation, every operation is a route Metro serves, and the document loads as OpenAPI with every
reference resolved."""

from __future__ import annotations

import json
import re
from html import escape

import schemathesis

from app import app
from chalicelib.api import registry
from chalicelib.api.openapi import description, page
from chalicelib.api.openapi.components import components


def described() -> list[tuple[str, str, str]]:
    return [(op.route, op.http, op.verb) for op in registry.METHODS]


def test_every_route_and_permission_entry_is_described() -> None:
    entries = {(route, method, verb) for route, rules in registry.PERMISSIONS.items() for method, verb in rules}
    missing = sorted(entries - set(described()))
    assert not missing, f"declare a Method(...) (api/methods.py) for: {missing}"
    assert set(app.routes) <= {route for route, _, _ in described()}, "a route of app.py has no operation"


def test_every_operation_is_served_once() -> None:
    ops = described()
    assert len(ops) == len(set(ops)), "an operation is described twice"
    unserved = [op for op in ops if registry.rule_for(*op) is None]
    assert not unserved, f"described but not in the permission table: {unserved}"
    for op in registry.METHODS:
        assert op.http in app.routes[op.route], (op.http, op.route)


def test_paths_are_concrete_templates_with_the_verb_after_the_colon() -> None:
    doc = description.document(registry.METHODS)
    assert "post" in doc["paths"]["/v1/projects/{project}/topics/{topic}:publish"]
    assert "get" in doc["paths"]["/v1/users/profile"]
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            declared = {q["name"] for q in operation.get("parameters", []) if q["in"] == "path"}
            assert declared == set(re.findall(r"{(\w+)}", path)), (method, path)


def test_every_reference_resolves_and_the_document_loads_as_openapi() -> None:
    doc = description.document(registry.METHODS)
    text = json.dumps(doc)
    schemas = components()
    for name in re.findall(r'"#/components/schemas/([^"]+)"', text):
        assert name in schemas, name
    loaded = schemathesis.openapi.from_dict(doc)
    operations = [result.ok() for result in loaded.get_all_operations()]
    assert len(operations) == len(registry.METHODS)
    assert json.loads(description.document_json(registry.METHODS)) == doc


def test_public_operations_need_no_token_and_the_others_say_their_errors() -> None:
    doc = description.document(registry.METHODS)
    assert doc["paths"]["/openapi.json"]["get"]["security"] == []
    pull = doc["paths"]["/v1/projects/{project}/subscriptions/{subscription}:pull"]["post"]
    assert "security" not in pull and set(description.ERRORS) <= set(pull["responses"])


def test_the_docs_page_lists_every_operation_and_loads_nothing_from_elsewhere() -> None:
    html = page.page(registry.METHODS)
    for op in registry.METHODS:
        assert f"<code>{escape(op.url)}</code>" in html, op.url
    assert "http://" not in html and "https://" not in html and "<script" not in html


def test_a_query_parameter_a_call_needs_is_required_and_the_others_are_not() -> None:
    doc = description.document(registry.METHODS)
    create = {q["name"]: q["required"] for q in doc["paths"]["/v1/projects/{project}/schemas"]["post"]["parameters"]
              if q["in"] == "query"}
    listed = {q["name"]: q["required"] for q in doc["paths"]["/v1/projects/{project}/schemas"]["get"]["parameters"]
              if q["in"] == "query"}
    assert create == {"schemaId": True}
    assert listed == {"pageSize": False, "pageToken": False, "view": False}
