"""Clock skew for the fault run (bench/chaos/skew.py): the offset follows the control file, strobes by real time,
survives a malformed file, and reaches clocks captured after it is installed."""

from __future__ import annotations

import dataclasses
import datetime
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench.chaos import skew

pytestmark = pytest.mark.unit

REAL = 1_800_000_000.0


class Real:
    """The injected real clock."""

    def __init__(self) -> None:
        self.now = REAL

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def real() -> Real:
    return Real()


@pytest.fixture
def control(tmp_path: Path) -> Path:
    return tmp_path / "skew.json"


@pytest.fixture
def clock(control: Path, real: Real) -> Iterator[skew.SkewedClock]:
    with skew.install(control, real=real, poll=0) as installed:
        yield installed
    assert time.time is skew._REAL_TIME and time.time_ns is skew._REAL_TIME_NS


def test_a_missing_or_empty_file_is_no_skew(clock: skew.SkewedClock, control: Path) -> None:
    assert time.time() == REAL
    control.write_text("")
    clock.refresh()
    assert time.time() == REAL
    skew.write(control, {})
    clock.refresh()
    assert time.time() == REAL and clock.errors == 0


def test_the_offset_follows_the_control_file(clock: skew.SkewedClock, control: Path, real: Real) -> None:
    skew.write(control, {"offset": 2.5})
    clock.refresh()
    assert time.time() == REAL + 2.5
    assert time.time_ns() == int(REAL * 1e9) + int(2.5e9)
    real.now += 10
    assert time.time() == REAL + 12.5
    skew.write(control, {"offset": -3})
    clock.refresh()
    assert time.time() == REAL + 7
    control.unlink()
    clock.refresh()
    assert time.time() == REAL + 10


def test_a_strobe_alternates_by_real_time(clock: skew.SkewedClock, control: Path, real: Real) -> None:
    skew.write(control, {"strobe": [-2.0, 2.0], "period": 0.25})
    clock.refresh()
    seen = []
    for step in range(6):
        real.now = REAL + step * 0.25 + 0.1
        seen.append(round(time.time() - real.now, 6))
    assert seen == [-2.0, 2.0, -2.0, 2.0, -2.0, 2.0]
    real.now = REAL + 0.24  # one period holds one offset
    assert clock.offset() == -2.0


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"offset": "3"}', '{"offset": true}',
                                  '{"strobe": [], "period": 1}', '{"strobe": [1, -1]}',
                                  '{"strobe": [1, -1], "period": 0}', '{"strobe": 5, "period": 1}'])
def test_a_malformed_file_keeps_the_last_offset(clock: skew.SkewedClock, control: Path, text: str) -> None:
    skew.write(control, {"offset": 1.5})
    clock.refresh()
    control.write_text(text)
    clock.refresh()
    assert time.time() == REAL + 1.5
    assert clock.errors == 1


def test_write_refuses_a_malformed_skew_and_replaces_the_file_whole(control: Path) -> None:
    with pytest.raises(ValueError):
        skew.write(control, {"strobe": [1.0]})
    assert not control.exists()
    skew.write(control, {"offset": 3.0})
    assert skew.read(control) == skew.Skew((3.0,))
    assert [p.name for p in control.parent.iterdir()] == [control.name]  # no temporary file left behind


def test_a_dataclass_default_captured_after_install_is_skewed(control: Path, real: Real) -> None:
    @dataclasses.dataclass
    class Before:
        clock: Callable[[], float] = time.time

    skew.write(control, {"offset": 4.0})
    with skew.install(control, real=real, poll=0):

        @dataclasses.dataclass
        class After:  # as chalicelib's Context, imported after install
            clock: Callable[[], float] = time.time

        assert After().clock() == REAL + 4.0
        assert Before().clock() != REAL + 4.0  # captured the real clock: why install comes first
    assert After().clock() == REAL + 4.0  # a captured default keeps the skewed clock, which reads no file now


def test_uninstall_restores_and_allows_another_install(control: Path, real: Real) -> None:
    first = skew.install(control, real=real, poll=0)
    with pytest.raises(RuntimeError):
        skew.install(control, real=real, poll=0)
    skew.uninstall()
    assert time.time is skew._REAL_TIME
    assert first.skew == skew.Skew()
    with skew.install(control, real=real, poll=0):
        assert time.time() == REAL


def test_the_default_real_clock_is_never_the_skewed_one(control: Path) -> None:
    skew.write(control, {"offset": 100.0})
    with skew.install(control, poll=0):
        assert time.time() - skew._REAL_TIME() == pytest.approx(100.0, abs=1.0)
        assert time.time_ns() / 1e9 - skew._REAL_TIME() == pytest.approx(100.0, abs=1.0)


def test_the_thread_rereads_the_control_file(control: Path, real: Real) -> None:
    changed = threading.Event()
    with skew.install(control, real=real, poll=0.005) as clock:
        skew.write(control, {"offset": 7.0})
        for _ in range(2000):  # until the thread has read it (bounded; no fixed sleep)
            if time.time() == REAL + 7.0:
                changed.set()
                break
            changed.wait(0.005)
        assert changed.is_set()
        assert clock._thread is not None and clock._thread.daemon
    assert clock._thread is not None and not clock._thread.is_alive()


def test_moto_clock_follows_the_skew(control: Path, real: Real) -> None:
    import moto.sqs.models as sqs_models
    from moto.core import utils

    original = utils.utcnow
    skew.write(control, {"offset": -3.0})
    with skew.install(control, real=real, poll=0, moto=True):
        want = datetime.datetime.fromtimestamp(REAL - 3.0, datetime.timezone.utc).replace(tzinfo=None)
        assert utils.utcnow() == want
        assert sqs_models.unix_time() == pytest.approx(REAL - 3.0)  # moto's own clock, through utcnow
    assert utils.utcnow is original


@pytest.mark.parametrize(("spec", "label"), [({}, "no skew"), ({"offset": 3}, "steady +3 s"),
                                             ({"offset": -3.0}, "steady -3 s"),
                                             ({"strobe": [-2, 2], "period": 0.25}, "strobe -2/+2 s every 0.25 s")])
def test_describe(spec: dict[str, object], label: str) -> None:
    assert skew.describe(spec) == label


def test_every_listed_skew_is_valid_and_distinct() -> None:
    labels = [skew.describe(s) for s in skew.SKEWS]
    assert len(set(labels)) == len(skew.SKEWS) >= 4


def test_installed_first_it_reaches_the_context_clock_default(control: Path) -> None:
    """In a fresh process, as a role starts: the skew installed before chalicelib is imported is Context's clock,
    and importing the fault tools themselves loads no chalicelib."""
    skew.write(control, {"offset": 50.0})
    script = (
        "import dataclasses, sys, time\n"
        "from pathlib import Path\n"
        "from bench.chaos import crashpoints, skew\n"
        "assert not [m for m in sys.modules if m.startswith('chalicelib')]\n"
        f"skew.install(Path({str(control)!r}), poll=0)\n"
        "from chalicelib.service.context import Context\n"
        "(clock,) = [f.default for f in dataclasses.fields(Context) if f.name == 'clock']\n"
        "print(clock() - skew._REAL_TIME())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert float(out.stdout) == pytest.approx(50.0, abs=5.0)


class _Stack:
    """What the nemesis's skew touches: the control files, written for real under ``workdir``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def skew_file(self, role: str) -> Path:
        return self.workdir / f"{role}.skew.json"


def test_the_nemesis_skews_metros_processes_and_never_steps_the_emulators_clock(tmp_path: Path) -> None:
    import random

    from bench.chaos.nemesis import SKEW, Nemesis
    from bench.chaos.procs import METRO_ROLES, LocalStack

    nemesis = Nemesis(_Stack(tmp_path), traffic=_Now())  # type: ignore[arg-type]
    nemesis.stop.set()  # each skew then ends at once
    rng = random.Random(3)
    faults = [nemesis._skew(rng) for _ in range(60)]
    assert {f.kind for f in faults} == {SKEW}
    assert {f.role for f in faults} == set(METRO_ROLES)
    assert not (tmp_path / "emulator.skew.json").exists()
    emulator = skew.parse(LocalStack._initial_skew("emulator"))
    assert emulator == skew.Skew((skew.EMULATOR_OFFSET,)) and skew.EMULATOR_OFFSET != 0
    assert all(skew.parse(LocalStack._initial_skew(role)) == skew.Skew() for role in METRO_ROLES)


class _Now:
    def now(self) -> float:
        return 0.0
