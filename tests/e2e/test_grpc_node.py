"""Google's Node.js client, @google-cloud/pubsub, on its default transport (gRPC) against the stack, pointed at it
as at Google's emulator: ``PUBSUB_EMULATOR_HOST=host:port``. tests/e2e/node/pubsub_roundtrip.js creates a topic
and a subscription, publishes, receives with ``subscription.on('message')`` (StreamingPull), acknowledges and
prints a JSON summary, which this test checks.

The client is installed by this test, at the version and with the dependencies that tests/e2e/node/package.json
and package-lock.json pin, with ``npm ci`` into ``.metro/cache/node/`` (ignored by git), once: a later run finds
it there and needs no network. Where npm is missing or cannot reach its registry, the test is skipped and says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.stack import ROOT, RunningStack

pytestmark = pytest.mark.e2e

SOURCE = Path(__file__).resolve().parent / "node"
PINS = ("package.json", "package-lock.json")
CACHE = ROOT / ".metro" / "cache" / "node"
INSTALL_TIMEOUT = 180  # seconds: a first install downloads about 30 MB (4 s here)
_NETWORK = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH", "EHOSTUNREACH",
            "network", "socket hang up", "request to https://")


def pinned_version() -> str:
    return str(json.loads((SOURCE / "package.json").read_text())["dependencies"]["@google-cloud/pubsub"])


def _digest() -> str:
    return hashlib.sha256(b"".join((SOURCE / name).read_bytes() for name in PINS)).hexdigest()[:16]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One installer at a time (two test runs, or two workers, may share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install(cache: Path = CACHE) -> Path:
    """The pinned client's ``node_modules`` under ``cache``: installed with ``npm ci`` unless an install of the
    same pins is there already (a stamp names the pins' digest). Skips the calling test where npm is missing
    or cannot reach its registry; fails on any other npm error."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("node and npm are not installed: Google's Node.js client cannot be installed")
    target = cache / f"pubsub-{pinned_version()}"
    stamp = target / ".installed"
    modules = target / "node_modules"
    with _locked(cache / ".lock"):
        if stamp.exists() and stamp.read_text().strip() == _digest() and modules.is_dir():
            return modules
        target.mkdir(parents=True, exist_ok=True)
        stamp.unlink(missing_ok=True)
        for name in PINS:
            shutil.copyfile(SOURCE / name, target / name)
        command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline",
                   "--cache", str(cache / "npm-cache"), "--fetch-timeout", "60000", "--fetch-retries", "1"]
        try:
            done = subprocess.run(command, cwd=target, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                                  check=False, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm ci did not finish in {INSTALL_TIMEOUT} s: the npm registry is not reachable")
        if done.returncode != 0:
            output = done.stdout + done.stderr
            if any(word in output for word in _NETWORK):
                said = [line for line in output.splitlines() if line.startswith("npm error")][:2]
                pytest.skip(f"npm cannot reach its registry to install @google-cloud/pubsub@{pinned_version()} "
                            f"({'; '.join(said) or output.strip()[-300:]})")
            raise AssertionError(f"npm ci failed ({done.returncode}):\n{output[-3000:]}")
        stamp.write_text(_digest() + "\n")
    return modules


@pytest.fixture(scope="module")
def node_modules() -> Path:
    return install()


def run_roundtrip(host: str, modules: Path, names: dict[str, str], messages: int = 5,
                  timeout: float = 120) -> dict[str, Any]:
    env = {**os.environ, "PUBSUB_EMULATOR_HOST": host, "NODE_PATH": str(modules),
           "METADATA_SERVER_DETECTION": "none",  # no probe of a cloud metadata server for credentials
           "MESSAGES": str(messages), "TIMEOUT_MS": str(int((timeout - 30) * 1000)), **names}
    done = subprocess.run(["node", str(SOURCE / "pubsub_roundtrip.js")], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    lines = done.stdout.strip().splitlines()
    assert lines, f"no summary (exit {done.returncode}):\n{done.stderr[-3000:]}"
    summary: dict[str, Any] = json.loads(lines[-1])
    assert done.returncode == 0 and "error" not in summary, f"{summary}\n{done.stderr[-3000:]}"
    return summary


@pytest.mark.timeout(INSTALL_TIMEOUT + 180)  # a first install, then the round trip
def test_node_client_round_trip_over_grpc(stack: RunningStack, node_modules: Path, unique: str) -> None:
    installed = json.loads((node_modules / "@google-cloud" / "pubsub" / "package.json").read_text())
    assert installed["version"] == pinned_version()
    project = "node-e2e"
    names = {"PROJECT": project, "TOPIC": f"t-{unique}", "SUBSCRIPTION": f"s-{unique}"}
    summary = run_roundtrip(stack.host, node_modules, names, messages=5)

    assert summary["topic"] == f"projects/{project}/topics/t-{unique}"
    assert summary["subscription"] == f"projects/{project}/subscriptions/s-{unique}"
    published = {m["id"]: m for m in summary["published"]}
    received = {m["id"]: m for m in summary["received"]}
    assert len(published) == 5 and set(received) == set(published)
    for message_id, sent in published.items():
        got = received[message_id]
        assert (got["data"], got["attributes"]) == (sent["data"], sent["attributes"])
        assert got["publishTime"].endswith("Z")
    assert summary["acknowledged"] == ["SUCCESS"] * 5
    assert summary["leftAfterAck"] == 0
