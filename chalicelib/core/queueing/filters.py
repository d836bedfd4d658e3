"""Google Cloud Pub/Sub subscription filters: parsing and matching on message attributes.

The language, as Google documents it on the "Filter messages" page:

* ``attributes:KEY`` is true when the message has the attribute KEY;
* ``attributes.KEY = "value"`` is true when KEY is present with exactly that value;
* ``attributes.KEY != "value"`` is true when KEY is absent or has another value;
* ``hasPrefix(attributes.KEY, "prefix")`` is true when KEY is present and its value starts with prefix;
* ``NOT expr`` (or the shorthand ``-expr``), ``expr AND expr``, ``expr OR expr`` and parentheses.

The keywords are case-sensitive and uppercase. AND and OR cannot be mixed without parentheses.
A bare key holds only letters, digits, ``_`` and ``-``; any other key is written as a string literal
(``attributes."my key"``). String literals take double or single quotes and backslash escapes, including
hexadecimal (``\\xHH``), Unicode (``\\uHHHH``, ``\\UHHHHHHHH``) and octal (``\\NNN``) ones. A filter is at
most 256 bytes of UTF-8; the empty filter matches every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NoReturn, TypeAlias

from chalicelib.core.errors import InvalidArgument

MAX_FILTER_BYTES = 256

_WHITESPACE = frozenset(" \t\r\n\f\v")
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_KEY_CHARS = _WORD_CHARS | {"-"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_OCTAL_DIGITS = frozenset("01234567")
_SIMPLE_ESCAPES = dict(zip("\\\"'`?abfnrtv", "\\\"'`?\a\b\f\n\r\t\v", strict=True))
_HEX_ESCAPE_LENGTHS = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True)
class Exists:
    key: str


@dataclass(frozen=True)
class Equals:
    key: str
    value: str


@dataclass(frozen=True)
class NotEquals:
    key: str
    value: str


@dataclass(frozen=True)
class HasPrefix:
    key: str
    prefix: str


@dataclass(frozen=True)
class Not:
    operand: Expr


@dataclass(frozen=True)
class And:
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Expr, ...]


Expr: TypeAlias = Exists | Equals | NotEquals | HasPrefix | Not | And | Or


def _test(expr: Exists | Equals | NotEquals | HasPrefix, attributes: Mapping[str, str]) -> bool:
    """One attribute test: a leaf of the expression tree."""
    value = attributes.get(expr.key)
    if isinstance(expr, Exists):
        return value is not None
    if isinstance(expr, Equals):
        return value == expr.value
    if isinstance(expr, NotEquals):
        return value != expr.value
    return value is not None and value.startswith(expr.prefix)


def evaluate(expr: Expr, attributes: Mapping[str, str]) -> bool:
    """Whether a message with these attributes satisfies the expression."""
    if isinstance(expr, Exists | Equals | NotEquals | HasPrefix):
        return _test(expr, attributes)
    if isinstance(expr, Not):
        return not evaluate(expr.operand, attributes)
    if isinstance(expr, And):
        return all(evaluate(operand, attributes) for operand in expr.operands)
    return any(evaluate(operand, attributes) for operand in expr.operands)


@dataclass(frozen=True)
class Filter:
    """A validated subscription filter; constructing one with invalid text raises InvalidArgument."""

    text: str
    expr: Expr | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "expr", _parse(self.text))

    def matches(self, attributes: Mapping[str, str]) -> bool:
        """Whether a message with these attributes passes the filter (always, for the empty filter)."""
        return self.expr is None or evaluate(self.expr, attributes)


def parse_filter(text: str) -> Filter:
    """Validate filter text; raises InvalidArgument naming the 1-based position of a syntax error."""
    return Filter(text)


def _parse(text: str) -> Expr | None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILTER_BYTES:
        raise InvalidArgument(f"Invalid filter: filter is {size} bytes; the maximum is {MAX_FILTER_BYTES} bytes")
    if text == "":
        return None
    return _Parser(text).parse()


class _Parser:
    """Recursive descent over the characters; ``pos`` is the 0-based index of the next character."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def parse(self) -> Expr:
        return self._expression(nested=False)

    def _fail(self, expected: str, pos: int | None = None) -> NoReturn:
        where = self.pos if pos is None else pos
        raise InvalidArgument(f"Invalid filter: expected {expected} at position {where + 1}")

    def _skip_whitespace(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
            self.pos += 1

    def _peek(self) -> str:
        """The next character after whitespace, or "" at the end of the text."""
        self._skip_whitespace()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _word(self) -> str:
        """The run of letters, digits and underscores after whitespace, without consuming it."""
        self._skip_whitespace()
        end = self.pos
        while end < len(self.text) and self.text[end] in _WORD_CHARS:
            end += 1
        return self.text[self.pos : end]

    def _expect(self, token: str) -> None:
        if self._peek() != token:
            self._fail(f"'{token}'")
        self.pos += 1

    def _expect_word(self, word: str) -> None:
        if self._word() != word:
            self._fail(f"'{word}'")
        self.pos += len(word)

    def _expression(self, nested: bool) -> Expr:
        """operand (AND operand)* | operand (OR operand)*, ending at ')' when nested, else at the end."""
        operands = [self._unary()]
        operator = ""
        while True:
            char = self._peek()
            if char == "" and not nested:
                break
            if char == ")" and nested:
                break
            word = self._word()
            if word not in ("AND", "OR"):
                self._fail("'AND', 'OR' or ')'" if nested else "'AND', 'OR' or end of filter")
            if operator and word != operator:
                raise InvalidArgument(
                    f"Invalid filter: AND and OR cannot be mixed without parentheses at position {self.pos + 1}"
                )
            operator = word
            self.pos += len(word)
            operands.append(self._unary())
        if len(operands) == 1:
            return operands[0]
        return And(tuple(operands)) if operator == "AND" else Or(tuple(operands))

    def _unary(self) -> Expr:
        """('NOT' | '-')* primary."""
        negations = 0
        while True:
            if self._peek() == "-":
                self.pos += 1
            elif self._word() == "NOT":
                self.pos += 3
            else:
                break
            negations += 1
        expr = self._primary()
        for _ in range(negations):
            expr = Not(expr)
        return expr

    def _primary(self) -> Expr:
        if self._peek() == "(":
            self.pos += 1
            expr = self._expression(nested=True)
            self.pos += 1  # the ')' that ended the nested expression
            return expr
        word = self._word()
        if word == "attributes":
            self.pos += len(word)
            return self._attribute_test()
        if word == "hasPrefix":
            self.pos += len(word)
            return self._has_prefix()
        self._fail("'attributes', 'hasPrefix', 'NOT', '-' or '('")

    def _attribute_test(self) -> Expr:
        """After 'attributes': ':' KEY | '.' KEY ('=' | '!=') STRING."""
        char = self._peek()
        if char not in (".", ":"):
            self._fail("'.' or ':'")
        self.pos += 1
        key = self._key()
        if char == ":":
            return Exists(key)
        self._peek()
        if self.text.startswith("!=", self.pos):
            self.pos += 2
            return NotEquals(key, self._string())
        if self.text.startswith("=", self.pos):
            self.pos += 1
            return Equals(key, self._string())
        self._fail("'=' or '!='")

    def _has_prefix(self) -> Expr:
        """After 'hasPrefix': '(' 'attributes' '.' KEY ',' STRING ')'."""
        self._expect("(")
        self._expect_word("attributes")
        self._expect(".")
        key = self._key()
        self._expect(",")
        prefix = self._string()
        self._expect(")")
        return HasPrefix(key, prefix)

    def _key(self) -> str:
        if self._peek() in ('"', "'"):
            return self._string()
        end = self.pos
        while end < len(self.text) and self.text[end] in _KEY_CHARS:
            end += 1
        if end == self.pos:
            self._fail("an attribute key")
        key = self.text[self.pos : end]
        self.pos = end
        return key

    def _string(self) -> str:
        quote = self._peek()
        if quote not in ('"', "'"):
            self._fail("a string literal")
        self.pos += 1
        chars: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(chars)
            if char == "\\":
                chars.append(self._escape())
            else:
                chars.append(char)
                self.pos += 1
        self._fail(f"closing {quote!r}")

    def _escape(self) -> str:
        """Decode the escape sequence whose backslash is at ``pos``, and consume it."""
        start = self.pos
        kind = self.text[start + 1 : start + 2]
        if kind in _SIMPLE_ESCAPES:
            self.pos += 2
            return _SIMPLE_ESCAPES[kind]
        if kind in _HEX_ESCAPE_LENGTHS:
            digits, valid = self.text[start + 2 : start + 2 + _HEX_ESCAPE_LENGTHS[kind]], _HEX_DIGITS
            count, base, first = _HEX_ESCAPE_LENGTHS[kind], 16, start + 2
        elif kind in ("0", "1", "2", "3"):
            digits, valid = self.text[start + 1 : start + 4], _OCTAL_DIGITS
            count, base, first = 3, 8, start + 1
        else:
            self._fail("a valid escape sequence after '\\'", start)
        if len(digits) != count or not all(digit in valid for digit in digits):
            self._fail(f"{count} {'hexadecimal' if base == 16 else 'octal'} digits in escape sequence", start)
        code_point = int(digits, base)
        if code_point > 0x10FFFF or 0xD800 <= code_point <= 0xDFFF:
            self._fail("a valid Unicode code point in escape sequence", start)
        self.pos = first + count
        return chr(code_point)
