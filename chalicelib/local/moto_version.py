"""The check that Metro's patches of moto's private internals run on the moto release they were written for.

moto_fixes.py and moto_speedups.py replace methods of moto's SQS models and server that are no public
API: another moto may rename them, change what they do, or already fix what they mend, and a patch would
then break the emulator quietly. Each patch module names the release it was written for (``MOTO_VERSION``)
and refuses to apply on any other, so a moto upgrade fails at start with what to do instead of misbehaving
under load. requirements-run.txt pins the same release (a unit test keeps them in step).
"""

from __future__ import annotations

from importlib import metadata


def installed() -> str:
    """The version of the moto distribution in this environment."""
    return metadata.version("moto")


def require(written_for: str, patches: str) -> None:
    """RuntimeError unless the installed moto is the release ``patches`` (a module's path) was written for."""
    found = installed()
    if found != written_for:
        raise RuntimeError(
            f"{patches} patches private internals of moto {written_for}, but moto {found} is installed: "
            f"install moto[server]=={written_for} (requirements-run.txt), or check every patch of {patches} "
            "against the new release and then raise the version it names (and the pin) with it")
