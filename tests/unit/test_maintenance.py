"""delivery/maintenance.py: when a maintenance run does its hourly work."""

from __future__ import annotations

from chalicelib.delivery.maintenance import hourly_work_due


def test_hourly_work_runs_in_the_first_minute_of_an_hour() -> None:
    assert hourly_work_due({"time": "2026-11-24T14:00:00Z"})
    assert not hourly_work_due({"time": "2026-11-24T14:01:00Z"})
    assert not hourly_work_due({"time": "2026-11-24T14:59:00Z"})
    assert hourly_work_due(None) and hourly_work_due({})  # a local or manual run does everything
    assert hourly_work_due({"time": "garbage"})
