"""Hostile JSON Schema definitions: each is refused with INVALID_ARGUMENT when it is compiled (schemas:validate,
create, commit, or the first publish to a topic using it), nothing is fetched, and what checking a message may
cost is bounded.

A listener on 127.0.0.1 (a thread of the test) stands for a metadata endpoint, and a file under tmp_path for a
local secret: a definition that made Metro read either would have the listener record a connection, or put the
file's value in an error. Bounds are shown by structure, never by the clock: Python's ``re`` is made to fail if
a message check reaches it (RE2 runs every pattern), jsonschema's pairwise ``equal`` is counted (values compare
by key), and the work of a check is counted in budget units.
"""

from __future__ import annotations

import contextlib
import json
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema._keywords
import jsonschema._utils
import pytest

from chalicelib.core.schemas.compiled import Checker, check_message, compile_spec, conforming
from chalicelib.core.schemas.invalid import DefinitionInvalid, MessageInvalid
from chalicelib.core.schemas.model import Encoding, SchemaRevision, SchemaSpec, SchemaType
from chalicelib.core.wire.messages import NewMessage

SECRET = "SECRET-FROM-A-LOCAL-FILE"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection; it answers as an HTTP server would, with a
    schema, so that a client that fetched would get something to use."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        seen = self.seen

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(2)
                try:
                    seen.append(self.request.recv(4096) or b"(a connection)")
                except OSError:
                    seen.append(b"(a connection)")
                body = json.dumps({"const": "fetched"}).encode()
                with contextlib.suppress(OSError):
                    self.request.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                         + str(len(body)).encode() + b"\r\n\r\n" + body)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    listening = Listener()
    yield listening
    listening.close()


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"const": SECRET}))
    return path


def remote_definitions(base: str, secret: Path) -> dict[str, Any]:
    """Definitions that point outside themselves: ``base`` is the listener's URL, ``secret`` a local file."""
    return {
        "http": {"$ref": f"{base}/latest/meta-data/iam/security-credentials/"},
        "https": {"$ref": base.replace("http:", "https:") + "/x.json"},
        "file": {"$ref": secret.as_uri()},
        "relative": {"$ref": "other.json"},
        "relative-pointer": {"$ref": "other.json#/$defs/x"},
        "id-base": {"$id": f"{base}/schemas/root.json", "$ref": "other.json"},
        "nested-id": {"$id": f"{base}/a/", "properties": {"x": {"$id": "b/", "$ref": "c.json"}}},
        "file-id": {"$id": secret.parent.as_uri() + "/", "$ref": secret.name},
        "dynamic-ref": {"$dynamicRef": f"{base}/d.json#meta"},
        "in-defs": {"$defs": {"x": {"$ref": f"{base}/x"}}, "$ref": "#/$defs/x"},
        "unused-defs": {"$defs": {"x": {"$ref": f"{base}/x"}}, "type": "object"},
        "in-definitions": {"definitions": {"x": {"$ref": f"{base}/x"}}, "$ref": "#/definitions/x"},
        "under-items": {"type": "array", "items": {"$ref": f"{base}/items"}},
        "schema-keyword": {"$schema": f"{base}/meta-schema", "type": "object"},
        "meta-schema": {"$ref": DRAFT},
        "bad-url": {"$ref": "http://[::1/x"},
    }


def _json_schema(definition: Any) -> Checker:
    return compile_spec(SchemaSpec(SchemaType.JSON_SCHEMA, json.dumps(definition)))


def _refused(checker: Checker, message: Any) -> str:
    with pytest.raises(MessageInvalid) as refused:
        check_message(checker, json.dumps(message).encode(), Encoding.JSON)
    return refused.value.reason


@pytest.mark.parametrize("case", sorted(remote_definitions("http://h", Path("/s"))))
def test_a_reference_outside_the_definition_is_refused_and_nothing_is_fetched(case: str, listener: Listener,
                                                                             secret: Path) -> None:
    definition = remote_definitions(listener.url, secret)[case]
    with pytest.raises(DefinitionInvalid) as refused:
        checker = _json_schema(definition)
        for message in ({}, "x", [1], {"x": 1}):  # where a definition compiled, a check used to fetch
            with contextlib.suppress(MessageInvalid):
                check_message(checker, json.dumps(message).encode(), Encoding.JSON)
    assert (refused.value.http_code, refused.value.status) == (400, "INVALID_ARGUMENT")
    assert SECRET not in str(refused.value)
    assert listener.seen == []


LOOPS = {
    "self": {"$ref": "#"},
    "pair": {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
             "$ref": "#/$defs/a"},
    "not": {"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"},
    "then": {"$defs": {"a": {"if": True, "then": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"},
    "anchor": {"$defs": {"a": {"$anchor": "loop", "oneOf": [{"$ref": "#loop"}]}}, "$ref": "#loop"},
    "dynamic": {"$dynamicAnchor": "node", "allOf": [{"$dynamicRef": "#node"}]},
    "dependent": {"dependentSchemas": {"a": {"$ref": "#"}}},
}


@pytest.mark.parametrize("case", sorted(LOOPS))
def test_references_that_loop_on_the_same_value_are_refused(case: str) -> None:
    with pytest.raises(DefinitionInvalid, match="refers back to itself"):
        _json_schema(LOOPS[case])


def test_references_that_fan_out_exponentially_are_refused() -> None:
    defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
                            for i in range(30)}
    with pytest.raises(DefinitionInvalid, match="more than 10000 subschemas"):
        _json_schema({"$defs": {**defs, "d30": {"type": "string"}}, "$ref": "#/$defs/d0"})


TREE = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string", "pattern": "^[a-z]+$"}, "kids": {"type": "array", "items": {"$ref": "#"}}}}
ALLOWED: dict[str, tuple[Any, Any, Any]] = {
    "recursive tree": (TREE, {"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}]},
                       {"name": "a", "kids": [{"name": "b", "kids": [{"name": "C"}]}]}),
    "anchor": ({"$defs": {"n": {"$anchor": "num", "type": "integer"}}, "items": {"$ref": "#num"}}, [1, 2], [1, "x"]),
    "pointer escapes": ({"$defs": {"a/b": {"type": "string"}, "c~d": {"type": "null"}},
                         "properties": {"s": {"$ref": "#/$defs/a~1b"}, "n": {"$ref": "#/$defs/c~0d"}}},
                        {"s": "x", "n": None}, {"s": 1}),
    "embedded $id": ({"$id": "https://example.com/root.json", "$defs": {"n": {"$id": "n.json", "type": "integer"}},
                      "properties": {"n": {"$ref": "n.json"}}}, {"n": 1}, {"n": "x"}),
    "dynamic tree": ({"$id": "https://example.com/tree", "$dynamicAnchor": "node", "type": "object",
                      "properties": {"kids": {"type": "array", "items": {"$dynamicRef": "#node"}}}},
                     {"kids": [{"kids": []}]}, {"kids": [1]}),
    "draft-07 $schema, read as 2020-12": ({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {
        "s": {"type": "string"}}, "items": {"$ref": "#/definitions/s"}}, ["a"], [1]),
}


@pytest.mark.parametrize("case", sorted(ALLOWED))
def test_references_inside_the_definition_still_work(case: str, listener: Listener) -> None:
    definition, good, bad = ALLOWED[case]
    checker = _json_schema(definition)
    check_message(checker, json.dumps(good).encode(), Encoding.JSON)
    _refused(checker, bad)
    assert listener.seen == []


def test_a_pattern_reached_through_a_reference_after_dollar_schema_is_still_matched_by_re2() -> None:
    """``$schema`` makes jsonschema pick its own validator class for the subschemas a ``$ref`` reaches; the walk
    removes it, so Metro's keywords (RE2, where ``$`` is the end of the text, as in ECMA-262) stay in force."""
    checker = _json_schema({"$schema": DRAFT, "type": "object",
                            "properties": {"s": {"pattern": "^a$"}, "next": {"$ref": "#"}}})
    check_message(checker, b'{"next": {"s": "a"}}', Encoding.JSON)
    assert "does not match" in _refused(checker, {"next": {"next": {"s": "a\n"}}})


class _NoPythonRe:
    """Stands for the ``re`` module in jsonschema's keywords: a message check must never reach it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"jsonschema used Python's backtracking re.{name}")


PATTERNS: dict[str, tuple[Any, list[Any], list[Any]]] = {
    "pattern": ({"pattern": "^(a+)+$"}, ["aaaa"], ["a" * 100_000 + "!"]),
    "patternProperties": ({"patternProperties": {"^(a|aa)+$": {"type": "integer"}}},
                          [{"aaaa": 1}], [{"aaaa": "x"}, {"a" * 50_000 + "!": 1, "aa": "x"}]),
    "additionalProperties": ({"patternProperties": {"^(a|aa)+$": True}, "additionalProperties": False},
                             [{"aaaa": 1}], [{"a" * 50_000 + "!": 1}]),
    "unevaluatedProperties": ({"patternProperties": {"^(x+x+)+y$": True}, "unevaluatedProperties": False},
                              [{"xxy": 1}], [{"x" * 50_000: 1}]),
    "propertyNames": ({"propertyNames": {"pattern": "^(a+)+$"}}, [{"aaa": 1}], [{"a" * 50_000 + "!": 1}]),
}


@pytest.mark.parametrize("case", sorted(PATTERNS))
def test_patterns_never_reach_pythons_backtracking_re(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    definition, good, bad = PATTERNS[case]
    checker = _json_schema(definition)
    monkeypatch.setattr(jsonschema._keywords, "re", _NoPythonRe())
    monkeypatch.setattr(jsonschema._utils, "re", _NoPythonRe())
    for message in good:
        check_message(checker, json.dumps(message).encode(), Encoding.JSON)
    for message in bad:
        _refused(checker, message)


def test_patterns_follow_ecma_262_and_refuse_what_needs_backtracking() -> None:
    assert "does not match" in _refused(_json_schema({"pattern": "^a$"}), "a\n")
    check_message(_json_schema({"pattern": "^\\u00e9+$"}), json.dumps("éé").encode(), Encoding.JSON)
    for pattern in ("(a)\\1", "(?=a)a", "(?<=a)b", "(?!a)b", "(?<!a)b"):
        with pytest.raises(DefinitionInvalid, match="backreferences or lookaround"):
            _json_schema({"properties": {"p": {"pattern": pattern}}})
    with pytest.raises(DefinitionInvalid, match="patternProperties"):
        _json_schema({"patternProperties": {"(\\w)\\1": True}})
    with pytest.raises(DefinitionInvalid, match="RE2 cannot compile"):  # too large a program
        _json_schema({"pattern": "^[\\p{L}]{1,100}$"})
    with pytest.raises(DefinitionInvalid, match="at most 1000 characters"):
        _json_schema({"pattern": "a" * 1001})
    with pytest.raises(DefinitionInvalid, match="at most 64 distinct patterns"):
        _json_schema({"properties": {f"p{i}": {"pattern": f"^{i}$"} for i in range(65)}})


def test_a_pattern_costs_work_linear_in_the_text() -> None:
    from chalicelib.core.schemas import budget

    checker = _json_schema({"pattern": "^(a+)+$"})
    spent = []
    for size in (100_000, 200_000, 400_000):
        with budget.opened(10**9) as spending:
            _refused(checker, "a" * size + "!")
        spent.append(spending.spent)
    assert spent[0] > 0 and spent[2] - spent[1] <= 2 * (spent[1] - spent[0]) + 2  # twice the text, twice the work
    assert spent[2] < 5_000  # 400,001 characters, a 4-instruction program: ~1,600 units


def _count_equal(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    original = jsonschema._utils.equal

    def counted(one: Any, two: Any) -> bool:
        calls[0] += 1
        return bool(original(one, two))

    monkeypatch.setattr(jsonschema._utils, "equal", counted)
    monkeypatch.setattr(jsonschema._keywords, "equal", counted)
    return calls


def test_enums_and_unique_items_compare_by_key_not_pairwise(monkeypatch: pytest.MonkeyPatch) -> None:
    enum = _json_schema({"type": "array", "items": {"enum": list(range(2_000))}})
    unique = _json_schema({"type": "array", "uniqueItems": True})
    calls = _count_equal(monkeypatch)
    check_message(enum, json.dumps([1_999] * 300).encode(), Encoding.JSON)
    check_message(unique, json.dumps([{"id": i, "tags": [i, str(i)]} for i in range(2_000)]).encode(), Encoding.JSON)
    assert calls == [0]
    for duplicated in ([1, 1.0], [{"a": 1, "b": [2]}, {"b": [2], "a": 1}], ["x", "y", "x"]):
        assert "non-unique" in _refused(unique, duplicated)
    for distinct in ([True, 1], [False, 0, None], [[1], [True]], [{"a": 1}, {"a": "1"}]):
        check_message(unique, json.dumps(distinct).encode(), Encoding.JSON)
    assert "is not one of" in _refused(_json_schema({"enum": [1, "a", None]}), True)


def test_huge_enums_are_refused() -> None:
    _json_schema({"enum": list(range(10_000))})
    with pytest.raises(DefinitionInvalid, match="at most 10000 values"):
        _json_schema({"properties": {"e": {"enum": list(range(10_001))}}})


def test_deeply_nested_and_oversized_definitions_are_refused() -> None:
    nested: Any = {"type": "string"}
    for _ in range(40):  # 81 levels of JSON: within Python's recursion limit, past Metro's bound of 64
        nested = {"properties": {"a": nested}}
    with pytest.raises(DefinitionInvalid, match="nested too deeply"):
        _json_schema(nested)
    with pytest.raises(DefinitionInvalid, match="at most 5000 subschemas"):
        _json_schema({"anyOf": [{}] * 5_001})


DOUBLING = {"$defs": {"a": {"type": "array", "allOf": [{"items": {"$ref": "#/$defs/a"}},
                                                       {"items": {"$ref": "#/$defs/a"}}]}},
            "$ref": "#/$defs/a"}  # each level of the message doubles the subschemas met: 2**depth


def test_a_check_that_would_fan_out_with_the_message_runs_out_of_budget() -> None:
    checker = _json_schema(DOUBLING)
    check_message(checker, b"[[[]]]", Encoding.JSON)
    assert "units of work" in _refused(checker, json.loads("[" * 16 + "]" * 16))


def test_the_error_text_a_check_keeps_is_bounded() -> None:
    """Each failing alternative quotes the whole value in its error; 200 of a 200 KB string would be 40 MB."""
    assert "units of work" in _refused(_json_schema({"anyOf": [{"type": "null"}] * 200}), "x" * 200_000)


def test_a_publish_shares_one_budget_across_its_messages_and_revisions() -> None:
    spec = SchemaSpec(SchemaType.JSON_SCHEMA, json.dumps(DOUBLING))
    revisions = [(SchemaRevision("projects/p/schemas/s", spec.type, spec.definition, rid, "t", 0.0), compile_spec(spec))
                 for rid in ("new", "old")]
    shallow = [NewMessage(b"[[[[[[[[]]]]]]]]", {}) for _ in range(1_000)]  # 2**8 subschemas each: within its own
    with pytest.raises(MessageInvalid, match=r"\(message \d+\).*units of work"):
        conforming(revisions, Encoding.JSON, shallow)
    assert len(conforming(revisions, Encoding.JSON, shallow[:3])) == 3
