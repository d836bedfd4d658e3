"""Unit and property-based tests of the Pub/Sub subscription filter language (chalicelib.core.queueing.filters)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.queueing.filters import MAX_FILTER_BYTES, Filter, parse_filter

ATTRS = {"a": "1", "b": "two", "ce-type": "com.example", "my key": "v", 'q"uote': "x", "é": "ü", "empty": ""}


def matches(text: str, attributes: dict[str, str]) -> bool:
    return parse_filter(text).matches(attributes)


def error_message(text: str) -> str:
    with pytest.raises(InvalidArgument) as info:
        parse_filter(text)
    return info.value.message


# ---------------------------------------------------------------------------------------------------------------------
# Table-driven tests
# ---------------------------------------------------------------------------------------------------------------------

MATCH_CASES = [
    # the empty filter matches everything
    ("", {}, True),
    ("", ATTRS, True),
    # existence
    ("attributes:a", ATTRS, True),
    ("attributes:z", ATTRS, False),
    ("attributes:empty", ATTRS, True),
    ("attributes:ce-type", ATTRS, True),
    ('attributes:"my key"', ATTRS, True),
    ("attributes:'my key'", ATTRS, True),
    ("attributes:A", ATTRS, False),  # keys are case-sensitive
    # equality: false when absent
    ('attributes.a = "1"', ATTRS, True),
    ('attributes.a="1"', ATTRS, True),
    ("attributes.a = '1'", ATTRS, True),
    ('attributes.a = "2"', ATTRS, False),
    ('attributes.z = "1"', ATTRS, False),
    ('attributes.b = "TWO"', ATTRS, False),  # values are case-sensitive
    ('attributes.empty = ""', ATTRS, True),
    ('attributes.z = ""', ATTRS, False),
    ('attributes.ce-type = "com.example"', ATTRS, True),
    ('attributes."my key" = "v"', ATTRS, True),
    ('attributes."q\\"uote" = "x"', ATTRS, True),
    ("attributes.'q\"uote' = 'x'", ATTRS, True),
    ('attributes."é" = "ü"', ATTRS, True),
    # inequality: true when absent
    ('attributes.a != "1"', ATTRS, False),
    ('attributes.a != "2"', ATTRS, True),
    ('attributes.z != "1"', ATTRS, True),
    ('attributes.z != "1"', {}, True),
    ('attributes.empty != ""', ATTRS, False),
    # hasPrefix: false when absent
    ('hasPrefix(attributes.ce-type, "com.")', ATTRS, True),
    ('hasPrefix(attributes.ce-type, "org.")', ATTRS, False),
    ('hasPrefix(attributes.ce-type, "")', ATTRS, True),
    ('hasPrefix(attributes.z, "")', ATTRS, False),
    ('hasPrefix(attributes.b, "two")', ATTRS, True),
    ('hasPrefix(attributes.b, "twos")', ATTRS, False),
    ("hasPrefix ( attributes . \"my key\" , 'v' )", ATTRS, True),
    # NOT and '-'
    ("NOT attributes:a", ATTRS, False),
    ("NOT attributes:z", ATTRS, True),
    ("-attributes:a", ATTRS, False),
    ("- attributes:z", ATTRS, True),
    ("NOT NOT attributes:a", ATTRS, True),
    ("--attributes:a", ATTRS, True),
    ("NOT -attributes:a", ATTRS, True),
    ("NOT(attributes:a)", ATTRS, False),
    ('NOT attributes.a = "1"', ATTRS, False),
    ('NOT attributes.z = "1"', ATTRS, True),
    ('NOT hasPrefix(attributes.b, "t")', ATTRS, False),
    # AND / OR
    ("attributes:a AND attributes:b", ATTRS, True),
    ("attributes:a AND attributes:z", ATTRS, False),
    ("attributes:z AND attributes:a", ATTRS, False),
    ("attributes:a AND attributes:b AND attributes:empty", ATTRS, True),
    ("attributes:a OR attributes:z", ATTRS, True),
    ("attributes:z OR attributes:a", ATTRS, True),
    ("attributes:y OR attributes:z", ATTRS, False),
    ("attributes:y OR attributes:z OR attributes:b", ATTRS, True),
    ('attributes.a="1"AND attributes:b', ATTRS, True),
    ("attributes:a\tAND\nattributes:b", ATTRS, True),
    # NOT binds tighter than AND / OR
    ("NOT attributes:z AND attributes:a", ATTRS, True),  # (NOT z) AND a
    ("NOT attributes:a AND attributes:z", ATTRS, False),  # (NOT a) AND z, not NOT (a AND z)
    ("NOT (attributes:a AND attributes:z)", ATTRS, True),
    ("NOT attributes:a OR attributes:b", ATTRS, True),  # (NOT a) OR b
    ("NOT (attributes:a OR attributes:b)", ATTRS, False),
    ("-attributes:a OR attributes:b", ATTRS, True),
    ("-(attributes:a OR attributes:b)", ATTRS, False),
    # parentheses
    ("(attributes:a)", ATTRS, True),
    ("((attributes:a))", ATTRS, True),
    ("(attributes:a AND attributes:b) OR attributes:z", ATTRS, True),
    ("attributes:z OR (attributes:a AND attributes:b)", ATTRS, True),
    ("attributes:a AND (attributes:z OR attributes:b)", ATTRS, True),
    ("attributes:a AND (attributes:z OR attributes:y)", ATTRS, False),
    ("(attributes:a OR attributes:z) AND (attributes:y OR attributes:b)", ATTRS, True),
    ("( attributes:a AND ( attributes:z OR -attributes:y ) )", ATTRS, True),
    # string escapes
    ('attributes.k = "a\\"b"', {"k": 'a"b'}, True),
    ("attributes.k = 'a\\'b'", {"k": "a'b"}, True),
    ("attributes.k = 'a\"b'", {"k": 'a"b'}, True),
    ('attributes.k = "a\'b"', {"k": "a'b"}, True),
    ('attributes.k = "a\\\\b"', {"k": "a\\b"}, True),
    ('attributes.k = "\\n\\t\\r\\a\\b\\f\\v\\?\\`"', {"k": "\n\t\r\a\b\f\v?`"}, True),
    ('attributes.k = "\\x41\\x7a"', {"k": "Az"}, True),
    ('attributes.k = "\\u00e9\\U0001F600"', {"k": "é\U0001f600"}, True),
    ('attributes.k = "\\101\\000\\377"', {"k": "A\x00\xff"}, True),
    ('attributes.k = "é😀"', {"k": "é😀"}, True),
    ('attributes.k = "a b"', {"k": "a b"}, True),
    ('attributes.k = "AND"', {"k": "AND"}, True),
    ('attributes."a\\x20b" = "c"', {"a b": "c"}, True),
    # words that look like keywords are fine as keys
    ('attributes.AND = "x" AND attributes:NOT', {"AND": "x", "NOT": ""}, True),
    ("attributes:attributes OR attributes:hasPrefix", {"hasPrefix": ""}, True),
    ("attributes:-a", {"-a": ""}, True),
    ("attributes:0", {"0": ""}, True),
]


@pytest.mark.parametrize(("text", "attributes", "expected"), MATCH_CASES)
def test_matches(text: str, attributes: dict[str, str], expected: bool) -> None:
    assert matches(text, attributes) is expected


ERROR_CASES = [
    # (text, message); the position is 1-based and counts characters
    ("attributes.foo", "expected '=' or '!=' at position 15"),
    ('attributes.foo "x"', "expected '=' or '!=' at position 16"),
    ('attributes.foo == "x"', "expected a string literal at position 17"),
    ("attributes.foo = x", "expected a string literal at position 18"),
    ('attributes.foo = "x', "expected closing '\"' at position 20"),
    ("attributes.foo = 'x\"", 'expected closing "\'" at position 21'),
    ('attributes:foo = "x"', "expected 'AND', 'OR' or end of filter at position 16"),
    ("attributes", "expected '.' or ':' at position 11"),
    ("attributes foo", "expected '.' or ':' at position 12"),
    ("attributes.", "expected an attribute key at position 12"),
    ('attributes.é = "x"', "expected an attribute key at position 12"),
    ("attributes:my key", "expected 'AND', 'OR' or end of filter at position 15"),
    ("attribute:foo", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 1"),
    ("Attributes:foo", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 1"),
    ("foo = 'x'", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 1"),
    ("   ", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 4"),
    ("()", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 2"),
    # keywords are case-sensitive
    ("not attributes:a", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 1"),
    ("attributes:a and attributes:b", "expected 'AND', 'OR' or end of filter at position 14"),
    ("attributes:a Or attributes:b", "expected 'AND', 'OR' or end of filter at position 14"),
    ("NOTattributes:a", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 1"),
    ("attributes:a ANDattributes:b", "expected 'AND', 'OR' or end of filter at position 14"),
    ("HASPREFIX(attributes.a, 'x')", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 1"),
    # AND and OR cannot be mixed without parentheses
    ("attributes:a AND attributes:b OR attributes:c", "AND and OR cannot be mixed without parentheses at position 31"),
    ("attributes:a OR attributes:b AND attributes:c", "AND and OR cannot be mixed without parentheses at position 30"),
    ("NOT attributes:a OR NOT attributes:b AND attributes:c", "cannot be mixed without parentheses at position 38"),
    (
        "(attributes:a OR attributes:b AND attributes:c)",
        "AND and OR cannot be mixed without parentheses at position 31",
    ),
    # dangling operators and parentheses
    ("attributes:a AND", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 17"),
    ("AND attributes:a", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 1"),
    ("NOT", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 4"),
    ("-", "expected 'attributes', 'hasPrefix', 'NOT', '-' or '(' at position 2"),
    ("attributes:a attributes:b", "expected 'AND', 'OR' or end of filter at position 14"),
    ("(attributes:a", "expected 'AND', 'OR' or ')' at position 14"),
    ("attributes:a)", "expected 'AND', 'OR' or end of filter at position 13"),
    ("(attributes:a))", "expected 'AND', 'OR' or end of filter at position 15"),
    # hasPrefix
    ("hasPrefix", "expected '(' at position 10"),
    ("hasPrefix attributes.a", "expected '(' at position 11"),
    ("hasPrefix(attributes:a, 'x')", "expected '.' at position 21"),
    ("hasPrefix(a, 'x')", "expected 'attributes' at position 11"),
    ("hasPrefix(attributes.a 'x')", "expected ',' at position 24"),
    ("hasPrefix(attributes.a, x)", "expected a string literal at position 25"),
    ("hasPrefix(attributes.a, 'x'", "expected ')' at position 28"),
    ("hasPrefix(attributes.a, 'x', 'y')", "expected ')' at position 28"),
    # escapes: the position is that of the backslash
    ('attributes.k = "\\q"', "expected a valid escape sequence after '\\' at position 17"),
    ('attributes.k = "\\', "expected a valid escape sequence after '\\' at position 17"),
    ('attributes.k = "\\x4"', "expected 2 hexadecimal digits in escape sequence at position 17"),
    ('attributes.k = "\\xZZ"', "expected 2 hexadecimal digits in escape sequence at position 17"),
    ('attributes.k = "\\u12"', "expected 4 hexadecimal digits in escape sequence at position 17"),
    ('attributes.k = "\\U0001F60"', "expected 8 hexadecimal digits in escape sequence at position 17"),
    ('attributes.k = "\\18"', "expected 3 octal digits in escape sequence at position 17"),
    ('attributes.k = "\\4"', "expected a valid escape sequence after '\\' at position 17"),
    ('attributes.k = "\\uD800"', "expected a valid Unicode code point in escape sequence at position 17"),
    ('attributes.k = "\\U00110000"', "expected a valid Unicode code point in escape sequence at position 17"),
    # positions count characters, not bytes
    ('attributes.k = "ééé" attributes:b', "expected 'AND', 'OR' or end of filter at position 22"),
]


@pytest.mark.parametrize(("text", "message"), ERROR_CASES)
def test_syntax_errors(text: str, message: str) -> None:
    actual = error_message(text)
    assert actual.startswith("Invalid filter: ")
    assert actual.endswith(message)


def test_error_is_a_400_invalid_argument() -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_filter("attributes.foo")
    assert info.value.to_wire() == {
        "error": {
            "code": 400,
            "message": "Invalid filter: expected '=' or '!=' at position 15",
            "status": "INVALID_ARGUMENT",
        }
    }


def test_filter_of_exactly_256_bytes_is_accepted() -> None:
    prefix = 'attributes.k = "'
    text = prefix + "x" * (MAX_FILTER_BYTES - len(prefix) - 1) + '"'
    assert len(text.encode()) == MAX_FILTER_BYTES == 256
    assert matches(text, {"k": "x" * (MAX_FILTER_BYTES - len(prefix) - 1)})


def test_filter_of_257_bytes_is_rejected() -> None:
    prefix = 'attributes.k = "'
    text = prefix + "x" * (MAX_FILTER_BYTES - len(prefix)) + '"'
    assert len(text.encode()) == 257
    assert error_message(text) == "Invalid filter: filter is 257 bytes; the maximum is 256 bytes"


def test_limit_counts_utf8_bytes_not_characters() -> None:
    text = 'attributes.k = "' + "é" * 120 + '"'  # 137 characters, 257 bytes
    assert len(text) < MAX_FILTER_BYTES < len(text.encode())
    assert "257 bytes" in error_message(text)
    assert matches('attributes.k = "' + "é" * 119 + '"', {"k": "é" * 119})


def test_deep_nesting_within_the_limit_parses() -> None:
    depth = (MAX_FILTER_BYTES - len("attributes:a")) // 2
    assert matches("(" * depth + "attributes:a" + ")" * depth, {"a": ""})
    assert matches("-" * 244 + "attributes:a", {"a": ""})  # an even number of negations


@pytest.mark.parametrize("text", ["(" * 256, "-" * 256, "NOT " * 64, "(NOT " * 51, "(-" * 128])
def test_pathological_nesting_raises_invalid_argument(text: str) -> None:
    assert error_message(text).endswith(f"at position {len(text) + 1}")


def test_filter_api() -> None:
    text = "attributes:a AND NOT attributes:b"
    parsed = parse_filter(text)
    assert isinstance(parsed, Filter)
    assert parsed.text == text
    assert parsed == Filter(text)
    assert hash(parsed) == hash(Filter(text))
    assert parsed.matches({"a": "1"}) and not parsed.matches({"a": "1", "b": "2"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.text = "attributes:z"  # type: ignore[misc]
    with pytest.raises(InvalidArgument):
        Filter("attributes:")  # constructing a Filter validates it too


# ---------------------------------------------------------------------------------------------------------------------
# Property-based tests
# ---------------------------------------------------------------------------------------------------------------------

# An AST independent of the module's: ("exists", key) | ("eq", key, value) | ("ne", key, value)
# | ("prefix", key, prefix) | ("not", node) | ("and", [node, ...]) | ("or", [node, ...])
Node = tuple[Any, ...]

KEYS = ["a", "b", "ce-type", "_x9", "AND", "my key", 'q"', "q'", "back\\slash", "é", "tab\t", "😀"]
VALUES = ["", "a", "ab", "abc", "b", "A", "q\"'", "\\", "é", "\n", "😀x"]
BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

keys = st.sampled_from(KEYS)
values = st.sampled_from(VALUES)
leaves = st.one_of(
    st.tuples(st.just("exists"), keys),
    st.tuples(st.just("eq"), keys, values),
    st.tuples(st.just("ne"), keys, values),
    st.tuples(st.just("prefix"), keys, values),
)
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.tuples(st.just("not"), children),
        st.tuples(st.sampled_from(["and", "or"]), st.lists(children, min_size=2, max_size=3)),
    ),
    max_leaves=6,
)
attribute_maps = st.dictionaries(keys, values, max_size=len(KEYS))


def oracle(node: Node, attributes: dict[str, str]) -> bool:
    kind = node[0]
    if kind == "exists":
        return node[1] in attributes
    if kind == "eq":
        return node[1] in attributes and attributes[node[1]] == node[2]
    if kind == "ne":
        return bool(attributes.get(node[1]) != node[2])
    if kind == "prefix":
        return node[1] in attributes and attributes[node[1]].startswith(node[2])
    if kind == "not":
        return not oracle(node[1], attributes)
    results = [oracle(child, attributes) for child in node[1]]
    return all(results) if kind == "and" else any(results)


def render_string(value: str, draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(['"', "'"]))
    out = []
    for char in value:
        must_escape = char in (quote, "\\")
        if draw(st.integers(0, 3)) == 0:
            out.append(draw(escapes(char)))
        elif must_escape:
            out.append("\\" + char)
        else:
            out.append(char)
    return quote + "".join(out) + quote


def escapes(char: str) -> st.SearchStrategy[str]:
    """Every escape sequence that denotes char."""
    code = ord(char)
    options = [f"\\U{code:08x}"]
    if code <= 0xFFFF:
        options.append(f"\\u{code:04X}")
    if code <= 0xFF:
        options += [f"\\x{code:02x}", f"\\{code:03o}"]
    named = {"\n": "n", "\t": "t", "?": "?", "`": "`", "\\": "\\", '"': '"', "'": "'"}
    if char in named:
        options.append("\\" + named[char])
    return st.sampled_from(options)


def render_key(key: str, draw: st.DrawFn) -> str:
    if BARE_KEY.fullmatch(key) and draw(st.booleans()):
        return key
    return render_string(key, draw)


@st.composite
def rendered(draw: st.DrawFn, node: Node) -> str:
    space = draw(st.sampled_from([" ", "  ", "\t", "\n "]))
    kind = node[0]
    if kind == "exists":
        text = "attributes:" + render_key(node[1], draw)
    elif kind in ("eq", "ne"):
        operator = f"{space}={space}" if kind == "eq" else draw(st.sampled_from(["!=", " != "]))
        text = "attributes." + render_key(node[1], draw) + operator + render_string(node[2], draw)
    elif kind == "prefix":
        text = f"hasPrefix(attributes.{render_key(node[1], draw)},{space}{render_string(node[2], draw)})"
    elif kind == "not":
        operand = draw(rendered(node[1]))
        if node[1][0] in ("and", "or"):
            operand = f"({operand})"
        text = draw(st.sampled_from(["NOT ", "NOT" + space, "-", "- "])) + operand
    else:
        parts = []
        for child in node[1]:
            part = draw(rendered(child))
            # Mixed operators need parentheses; the same operator may go without (the parser flattens it).
            if child[0] in ("and", "or") and (child[0] != kind or draw(st.booleans())):
                part = f"({part})"
            parts.append(part)
        text = f"{space}{kind.upper()}{space}".join(parts)
    return f"({text})" if draw(st.integers(0, 5)) == 0 else text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tree=trees, attribute_samples=st.lists(attribute_maps, min_size=1, max_size=8))
def test_parsed_filter_evaluates_like_the_ast(
    data: st.DataObject, tree: Node, attribute_samples: list[dict[str, str]]
) -> None:
    text = data.draw(rendered(tree))
    if len(text.encode()) > MAX_FILTER_BYTES:
        assert "the maximum is 256 bytes" in error_message(text)
        return
    parsed = parse_filter(text)
    for attributes in attribute_samples:
        assert parsed.matches(attributes) is oracle(tree, attributes), (text, attributes)


FILTER_ALPHABET = st.sampled_from(list("attributes.:=!-()\"'\\ ANDORNOThasPrefix,xu0123456789é\t\n"))
ERROR = re.compile(r"Invalid filter: (.+ at position (\d+)|filter is \d+ bytes; the maximum is 256 bytes)")


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(
            st.text(max_size=20),
            st.text(FILTER_ALPHABET, max_size=20),
            st.sampled_from(["attributes.", "attributes:", "hasPrefix(", " AND ", " OR ", "NOT ", '"', "'", "\\"]),
        ),
        max_size=12,
    ),
    attributes=attribute_maps,
)
def test_arbitrary_text_raises_only_invalid_argument(pieces: list[str], attributes: dict[str, str]) -> None:
    text = "".join(pieces)
    try:
        parsed = parse_filter(text)
    except InvalidArgument as error:
        found = ERROR.fullmatch(error.message)
        assert found, error.message
        if found.group(2):
            assert 1 <= int(found.group(2)) <= len(text) + 1
        return
    assert isinstance(parsed.matches(attributes), bool)
