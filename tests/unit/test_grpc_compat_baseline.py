"""The bookkeeping of the gRPC compatibility baseline (tests/grpc_baseline.py): what counts as a new
difference, a changed one or one gone, and which reasons survive a re-recording. The scenarios themselves need
Google's emulator (the compat tier)."""

from __future__ import annotations

import json

from tests.grpc_baseline import BASELINE, entry, load_baseline, mismatch

SAME = {"same": True, "observed": {"ends_with": "NotFound"}}
DIFF = {"same": False, "emulator": {"x": "OK"}, "metro": {"x": "InvalidArgument"}, "reason": "Google refuses x"}


def test_agreement_as_recorded_passes_and_any_change_fails() -> None:
    assert mismatch(SAME, {"ends_with": "NotFound"}, {"ends_with": "NotFound"}) is None
    assert "a new difference" in str(mismatch(SAME, {"ends_with": "NotFound"}, {"ends_with": "timed out"}))
    assert "both servers changed alike" in str(mismatch(SAME, {"ends_with": "OK"}, {"ends_with": "OK"}))
    assert "not in the baseline" in str(mismatch(None, {}, {}))


def test_a_recorded_difference_must_stay_the_same_and_have_a_reason() -> None:
    assert mismatch(DIFF, {"x": "OK"}, {"x": "InvalidArgument"}) is None
    assert "is gone" in str(mismatch(DIFF, {"x": "OK"}, {"x": "OK"}))
    assert "changed" in str(mismatch(DIFF, {"x": "OK"}, {"x": "NotFound"}))
    assert "without a reason" in str(mismatch({**DIFF, "reason": ""}, {"x": "OK"}, {"x": "InvalidArgument"}))


def test_recording_keeps_the_reason_of_the_same_difference_only() -> None:
    assert entry({"x": "OK"}, {"x": "InvalidArgument"}, DIFF)["reason"] == "Google refuses x"
    assert entry({"x": "OK"}, {"x": "NotFound"}, DIFF)["reason"] == ""
    assert entry({"x": "OK"}, {"x": "OK"}, DIFF) == {"same": True, "observed": {"x": "OK"}}


def test_the_baseline_explains_every_difference() -> None:
    recorded = load_baseline()
    assert recorded
    for name, item in recorded.items():
        assert item["same"] or item["reason"], name
    assert json.loads(BASELINE.read_text())["about"]
