"""One real local stack per test session (per xdist worker), driven over HTTP."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.stack import RunningStack, start_stack

_counter = itertools.count()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    running = start_stack(tmp_path_factory.mktemp("stack") / "metro.log")
    yield running
    running.stop()


@pytest.fixture
def project() -> str:
    return "e2e-project"


@pytest.fixture
def unique() -> str:
    """A fresh resource id per test, so tests sharing a stack never collide."""
    return f"r{next(_counter)}-{id(object()) % 100000}"
