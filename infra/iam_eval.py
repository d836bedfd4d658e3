"""A small IAM policy evaluator: enough of IAM's rules for Metro's own identity policies.

Allow and Deny statements (an explicit Deny wins; no statement that allows means denied), ``Action`` and
``Resource`` (string or list) with ``*`` and ``?`` wildcards: actions match case-insensitively, resources
case-sensitively, as IAM does; ``NotAction`` and ``NotResource`` are refused (Metro writes neither). Conditions:
``StringEquals``, ``StringLike``, ``StringNotEquals``, ``StringNotLike`` (and their ``IgnoreCase`` forms) on the
keys a request carries; operators and keys are ANDed, a key's values ORed; a key the request lacks fails the
positive operators and satisfies the negative ones. An action without a resource type asks for ``*`` and is
allowed only by a statement whose Resource matches ``*`` literally (infra/iam_actions.RESOURCELESS).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from infra.iam_actions import Request

Statement = Mapping[str, Any]


@dataclass(frozen=True)
class Grant:
    """One (statement, action, resource) of a policy: the unit the gate finds used or unused."""

    sid: str
    action: str
    resource: str

    def __str__(self) -> str:
        return f"{self.sid}: {self.action} on {self.resource}"


def listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


@cache
def _pattern(text: str, ignore_case: bool) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in text)
    return re.compile(body, re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def wildcard(pattern: str, value: str, ignore_case: bool = False) -> bool:
    """IAM's ``*`` (any run of characters) and ``?`` (one character)."""
    return _pattern(pattern, ignore_case).fullmatch(value) is not None


def _equals(pattern: str, value: str, ignore_case: bool) -> bool:
    return pattern.lower() == value.lower() if ignore_case else pattern == value


_OPERATORS = {"StringEquals": (_equals, False, False), "StringLike": (wildcard, False, False),
              "StringNotEquals": (_equals, True, False), "StringNotLike": (wildcard, True, False),
              "StringEqualsIgnoreCase": (_equals, False, True), "StringNotEqualsIgnoreCase": (_equals, True, True)}


def conditions_hold(condition: Mapping[str, Mapping[str, Any]] | None, request: Request) -> bool:
    for operator, tests in (condition or {}).items():
        if operator not in _OPERATORS:
            raise ValueError(f"condition operator {operator} is not supported by this evaluator")
        compare, negated, ignore_case = _OPERATORS[operator]
        for key, values in tests.items():
            value = request.key(key)
            if value is None:
                if not negated:
                    return False
                continue
            hit = any(compare(str(v), value, ignore_case) for v in listed(values))
            if hit == negated:
                return False
    return True


def _check(st: Statement) -> None:
    if "NotAction" in st or "NotResource" in st or "NotPrincipal" in st:
        raise ValueError(f"statement {st.get('Sid', '?')}: NotAction/NotResource are not supported")


def _resource_matches(pattern: str, resource: str) -> bool:
    if resource == "*":  # an action without a resource type: only a grant on "*" itself
        return pattern == "*"
    return wildcard(pattern, resource)


def matching(statements: Sequence[Statement], request: Request) -> Iterator[tuple[Statement, Grant]]:
    """Every (statement, grant) whose action, resource and conditions cover the request."""
    for st in statements:
        _check(st)
        actions = [a for a in listed(st.get("Action", [])) if wildcard(a, request.action, ignore_case=True)]
        resources = [r for r in listed(st.get("Resource", [])) if _resource_matches(str(r), request.resource)]
        if actions and resources and conditions_hold(st.get("Condition"), request):
            for a in actions:
                for r in resources:
                    yield st, Grant(str(st.get("Sid", "")), str(a), str(r))


@dataclass(frozen=True)
class Decision:
    allowed: bool
    used: tuple[Grant, ...]  # the Allow grants that covered it
    denied_by: tuple[Grant, ...] = ()


def evaluate(statements: Sequence[Statement], request: Request) -> Decision:
    allows: list[Grant] = []
    denies: list[Grant] = []
    for st, grant in matching(statements, request):
        (denies if st.get("Effect") == "Deny" else allows).append(grant)
    return Decision(bool(allows) and not denies, tuple(allows), tuple(denies))


def grants(statements: Sequence[Statement]) -> list[Grant]:
    """Every Allow (statement, action, resource) of a policy."""
    return [Grant(str(st.get("Sid", "")), str(a), str(r)) for st in statements if st.get("Effect") == "Allow"
            for a in listed(st.get("Action", [])) for r in listed(st.get("Resource", []))]
