"""The gRPC compatibility baseline, tests/compat/grpc_baseline.json: what Google's emulator and Metro each observed
in the gRPC scenarios of tests/compat/grpc_scenarios.py, and the reason for each difference. The bookkeeping lives
here, in no tier, so that the unit tier can test it without importing the compat tier
(tests/compat/test_grpc_compat.py runs the scenarios)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

Observation = dict[str, Any]

BASELINE = Path(__file__).resolve().parent / "compat" / "grpc_baseline.json"
RECORD = os.environ.get("METRO_COMPAT_RECORD", "") not in ("", "0")
ABOUT = ("Observations of tests/compat/grpc_scenarios.py on Google's Pub/Sub emulator and on Metro, both over gRPC "
         "(google-cloud-pubsub with PUBSUB_EMULATOR_HOST). 'same': both observed 'observed'; otherwise each "
         "server's observation and the reason for the difference. Checked by tests/compat/test_grpc_compat.py; "
         "METRO_COMPAT_RECORD=1 make compat rewrites it, keeping the reasons.")


def load_baseline(path: Path = BASELINE) -> dict[str, Any]:
    return json.loads(path.read_text())["scenarios"] if path.exists() else {}


def entry(emulator: Observation, metro: Observation, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The baseline's entry for a scenario observed so; a difference keeps the reason it was recorded with while
    it is the same difference."""
    if emulator == metro:
        return {"same": True, "observed": metro}
    reason = ""
    if previous and not previous.get("same") and (previous.get("emulator"), previous.get("metro")) == (
            emulator, metro):
        reason = previous.get("reason", "")
    return {"same": False, "emulator": emulator, "metro": metro, "reason": reason}


def mismatch(recorded: dict[str, Any] | None, emulator: Observation, metro: Observation) -> str | None:
    """Why these observations disagree with the recorded entry, or None when they agree with it."""
    seen = f"\n emulator: {json.dumps(emulator)}\n metro:    {json.dumps(metro)}"
    if recorded is None:
        return "not in the baseline (METRO_COMPAT_RECORD=1 records it)" + seen
    problem = _against_agreement(recorded, emulator, metro) if recorded["same"] else \
        _against_difference(recorded, emulator, metro)
    return None if problem is None else problem + seen


def _against_agreement(recorded: dict[str, Any], emulator: Observation, metro: Observation) -> str | None:
    if emulator == metro == recorded["observed"]:
        return None
    what = "a new difference" if emulator != metro else "both servers changed alike"
    return f"{what}; the baseline holds {json.dumps(recorded['observed'])} for both"


def _against_difference(recorded: dict[str, Any], emulator: Observation, metro: Observation) -> str | None:
    if emulator == metro:
        return f"the recorded difference is gone ({recorded['reason']}): record the baseline again"
    if (recorded["emulator"], recorded["metro"]) != (emulator, metro):
        return (f"the difference changed; recorded:\n emulator: {json.dumps(recorded['emulator'])}\n"
                f" metro:    {json.dumps(recorded['metro'])}\nobserved:")
    if not recorded.get("reason"):
        return "a recorded difference without a reason: write one in the baseline"
    return None
