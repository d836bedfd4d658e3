"""Test tiers: every test is marked with the directory it lives in, so ``pytest -m <tier>`` picks a tier.

unit (pure core, no AWS), functional (handlers and stores on in-process moto), package (``chalice package``, the
merged templates under cfn-lint, the bundle and the pyarrow layer: slow, so not in ``make check``), e2e (the real
local stack over HTTP), compat (side by side with Google's emulator), spark (the PySpark jobs on local[2]),
rehearsal (the packaged artifact deployed into an emulator: collected only under ``make rehearse``, which sets
``METRO_REHEARSAL_URL``; infra/rehearse.py).

When the ``-m`` expression names tiers only (``unit or functional``, ``not spark``), the directories it cannot
select are not even collected: importing the e2e and Spark modules costs seconds that a unit run need not pay.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "functional", "package", "e2e", "compat", "spark", "rehearsal")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = {"and", "or", "not"}


def tier_of(path: Path) -> str | None:
    """The tier of a test file or directory under tests/, or None."""
    try:
        parts = path.resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    return parts[0] if parts and parts[0] in TIERS else None


def selects_tier(expression: str, tier: str) -> bool:
    """Whether a ``-m`` expression can select tests of ``tier``; True unless it names tiers only."""
    words = set(_WORD.findall(expression))
    if not expression.strip() or not words <= set(TIERS) | _OPERATORS:
        return True
    if not re.fullmatch(r"[A-Za-z0-9_ ()]*", expression):
        return True
    literal = _WORD.sub(lambda m: m.group(0) if m.group(0) in _OPERATORS else str(m.group(0) == tier), expression)
    return bool(eval(literal, {"__builtins__": {}}))  # only True, False, and, or, not and parentheses remain


def pytest_configure(config: pytest.Config) -> None:
    """Tests never reach real AWS: fake credentials unless some are set, so that a boto3 client built and
    cached by any test (the clients are cached per process) can sign requests to moto whatever ran first."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(name, value)
    # `make test` sets METRO_IAM_RECORD: the in-process tests' AWS calls are recorded by acting function for the IAM
    # gate (chalicelib/store/call_record.py, infra/iam_gate.py). Resolved now, before a test changes the environment.
    from chalicelib.store import call_record

    call_record.recorder()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    tier = tier_of(collection_path)
    if tier is None or collection_path.resolve() != TESTS / tier:
        return None
    if tier == "rehearsal" and not os.environ.get("METRO_REHEARSAL_URL"):
        return True  # nothing to run against without a deployed stage
    return None if selects_tier(config.getoption("markexpr") or "", tier) else True


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item.path)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
