"""Process environment variables set for a block and put back after it (the benchmark's settings)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping


@contextlib.contextmanager
def environment(values: Mapping[str, str], removed: tuple[str, ...] = ()) -> Iterator[None]:
    """``values`` set and ``removed`` unset inside the block; every one of them as it was after it."""
    saved = {name: os.environ.get(name) for name in [*values, *removed]}
    os.environ.update(values)
    for name in removed:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
