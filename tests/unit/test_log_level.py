"""Metro's loggers (``metro.*``) log at METRO_LOG_LEVEL once the Chalice app is imported (Chalice sets its app
logger, named like the app, to ERROR; the fault run found the pump's and the publish path's warnings missing)."""

from __future__ import annotations

import logging

import pytest

from chalicelib import config


def test_metro_warnings_survive_the_app_import() -> None:
    import app  # noqa: F401  (the import configures Chalice's logger)

    assert logging.getLogger("metro.pump").isEnabledFor(logging.WARNING)
    assert logging.getLogger("metro.pump").getEffectiveLevel() == logging.getLevelName(config.log_level())


def test_log_level_reads_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METRO_LOG_LEVEL", " warning ")
    assert config.log_level() == "WARNING"
    monkeypatch.delenv("METRO_LOG_LEVEL")
    assert config.log_level() == "INFO"
