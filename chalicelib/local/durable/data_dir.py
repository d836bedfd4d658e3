"""The directory of the local stack's durable state (METRO_DATA_DIR, ``.metro/data`` under ``make run``).

- ``snapshot.pickle``: the emulator's backends when the journal of the generation it names began;
- ``journal-<generation>.log``: the calls since (chalicelib/local/durable/journal.py);
- ``lock``: held (flock) by the stack using the directory: a second stack refuses to start on it.

Folding writes a snapshot naming the next generation, then starts that journal, then removes the old one: a
crash at any point leaves a snapshot and the journal that continues it (a missing journal is an empty one).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

from chalicelib.local.durable import journal, snapshot

SNAPSHOT = "snapshot.pickle"


class DataDirInUse(RuntimeError):
    pass


class DataDir:
    def __init__(self, path: Path, sync: bool) -> None:
        self.path = path
        self.sync = sync
        path.mkdir(parents=True, exist_ok=True)
        self._lock = os.open(path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise DataDirInUse(f"{path} is in use by another Metro stack: stop it, or set METRO_DATA_DIR to "
                               "another directory") from None
        self.generation = 0

    def journal_path(self, generation: int) -> Path:
        return self.path / f"journal-{generation}.log"

    def load(self) -> tuple[snapshot.Snapshot | None, journal.Reading]:
        """The snapshot (if any) and the whole records of the journal that continues it."""
        snap = snapshot.load(self.path / SNAPSHOT)
        self.generation = snap.generation if snap else 0
        return snap, journal.read(self.journal_path(self.generation))

    def open_journal(self, whole_bytes: int) -> journal.Journal:
        self._remove_other_journals()
        return journal.Journal(self.journal_path(self.generation), whole_bytes, self.sync)

    def fold(self, current: journal.Journal, moto_version: str) -> tuple[journal.Journal, int]:
        """Snapshot the emulator as it is now (the caller holds every call off) and start the next journal."""
        size = snapshot.write(self.path / SNAPSHOT, snapshot.capture(self.generation + 1, moto_version), self.sync)
        current.close()
        self.generation += 1
        return self.open_journal(0), size

    def _remove_other_journals(self) -> None:
        keep = self.journal_path(self.generation).name
        for old in self.path.glob("journal-*.log"):
            if old.name != keep:
                old.unlink()

    def close(self) -> None:
        os.close(self._lock)


def wipe(path: Path) -> bool:
    """Remove the durable state at ``path`` (``make reset``, ``metro reset``); refuses while a stack uses it."""
    if not path.exists():
        return False
    DataDir(path, sync=False).close()  # raises DataDirInUse while a stack holds it
    shutil.rmtree(path)
    return True
