"""Durable local state: the embedded emulator's calls journaled before they are answered, snapshots that fold the
journal, and the replay that brings a stopped (or killed) stack back (docs/local-state.md)."""
