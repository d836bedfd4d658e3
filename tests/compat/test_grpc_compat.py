"""The gRPC scenarios of tests/compat/grpc_scenarios.py, driven by google-cloud-pubsub on its default transport
against Google's Pub/Sub emulator and against Metro, both named by ``PUBSUB_EMULATOR_HOST``, compared.

Where the two agree and where they differ is recorded in tests/compat/grpc_baseline.json, as the REST suite keeps
its known differences (tests/compat/cases.py): each scenario's observation on each server and, for a difference,
its reason. A scenario fails when either server observes something the baseline does not hold: a new difference,
a recorded one gone, or both changed alike. ``METRO_COMPAT_RECORD=1 make compat`` rewrites the baseline from what
was observed, keeping the reasons of differences that are still the same; a difference without a reason fails
until one is written.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

from tests.compat.conftest import Emulator
from tests.compat.grpc_scenarios import SCENARIOS, Clients, Observation, observe
from tests.grpc_baseline import ABOUT, BASELINE, RECORD, entry, load_baseline, mismatch
from tests.stack import RunningStack

pytestmark = [
    pytest.mark.compat,
    pytest.mark.skipif(shutil.which("gcloud") is None,
                       reason="gcloud is not installed: the compatibility tests need `gcloud beta emulators pubsub`"),
]

class Run:
    """Both servers' clients and what each scenario observed on them."""

    def __init__(self, emulator: Emulator, metro: RunningStack) -> None:
        self.clients = (Clients(emulator.url.removeprefix("http://")), Clients(metro.host))
        self.observed: dict[str, tuple[Observation, Observation]] = {}

    def both(self, scenario: str) -> tuple[Observation, Observation]:
        pair = (observe(self.clients[0], scenario), observe(self.clients[1], scenario))
        self.observed[scenario] = pair
        return pair


@pytest.fixture(scope="module")
def run(emulator: Emulator, metro: RunningStack) -> Iterator[Run]:
    running = Run(emulator, metro)
    yield running
    for clients in running.clients:
        clients.close()
    if RECORD and running.observed:
        previous = load_baseline()
        scenarios = {**previous, **{name: entry(emu, met, previous.get(name))
                                    for name, (emu, met) in running.observed.items()}}
        ordered = {name: scenarios[name] for name in SCENARIOS if name in scenarios}
        BASELINE.write_text(json.dumps({"about": ABOUT, "scenarios": ordered}, indent=2, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_grpc_scenario_against_the_baseline(run: Run, scenario: str) -> None:
    emulator, metro = run.both(scenario)
    if RECORD:
        return
    problem = mismatch(load_baseline().get(scenario), emulator, metro)
    assert problem is None, f"{scenario}: {problem}"


def test_every_baseline_entry_is_a_scenario() -> None:
    assert set(load_baseline()) <= set(SCENARIOS)
