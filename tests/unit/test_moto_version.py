"""The patches of moto's private internals (local/moto_fixes.py, local/moto_speedups.py) apply only on the moto
release they were written for, the one requirements-run.txt pins; on another they refuse at start, before
patching anything."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from chalicelib.local import moto_fixes, moto_speedups, moto_version

ROOT = Path(__file__).resolve().parents[2]
PATCHES: list[tuple[str, Callable[[], bool], str]] = [
    ("chalicelib/local/moto_fixes.py", moto_fixes.fix_moto, moto_fixes.MOTO_VERSION),
    ("chalicelib/local/moto_speedups.py", moto_speedups.speed_up_moto, moto_speedups.MOTO_VERSION),
]


def pinned() -> str:
    [version] = re.findall(r"^moto\[server\]==([0-9][0-9A-Za-z.]*)\s*$", (ROOT / "requirements-run.txt").read_text(),
                           re.MULTILINE)
    return version


@pytest.mark.parametrize(("path", "apply", "written_for"), PATCHES, ids=[p[0] for p in PATCHES])
def test_each_patch_module_names_the_pinned_moto(path: str, apply: Callable[[], bool], written_for: str) -> None:
    assert written_for == pinned() == moto_version.installed(), (
        f"{path} was written for moto {written_for}: check its patches against the pinned release")


def moto_internals() -> list[object]:
    """What the patches replace: compared before and after a refused call."""
    import moto.sqs.models as sqs
    from moto import backends

    return [sqs.Queue.delete_message, sqs.Queue.pending_message_groups, sqs.Queue.attributes,
            sqs.SQSBackend.receive_message, sqs.Message.visible, sqs.unix_time, sqs.unix_time_millis,
            backends.list_of_moto_modules]


@pytest.mark.parametrize(("path", "apply", "written_for"), PATCHES, ids=[p[0] for p in PATCHES])
def test_another_moto_is_refused_before_any_patch(monkeypatch: pytest.MonkeyPatch, path: str,
                                                  apply: Callable[[], bool], written_for: str) -> None:
    monkeypatch.setattr(moto_version, "installed", lambda: "5.3.0")
    before = moto_internals()
    unwrapped = apply.__wrapped__  # type: ignore[attr-defined]  # functools.cache keeps the body here
    with pytest.raises(RuntimeError, match=rf"{re.escape(path)} patches private internals of moto "
                                           rf"{re.escape(written_for)}, but moto 5\.3\.0 is installed"):
        unwrapped()
    assert moto_internals() == before


def test_the_message_says_what_to_do() -> None:
    with pytest.raises(RuntimeError) as info:
        moto_version.require("9.9.9", "chalicelib/local/x.py")
    assert f"but moto {moto_version.installed()} is installed" in str(info.value)
    assert "install moto[server]==9.9.9 (requirements-run.txt)" in str(info.value)
