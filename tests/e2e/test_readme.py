"""Every example of README.md and docs/*.md runs against a real stack, twice, so the examples cannot rot.

Each page's python and shell blocks run in order, in one temporary directory, with the variables ``make run``
reads (``METRO_PORT``, ``METRO_AMS_PORT``, ``METRO_EMULATOR_PORT``, ``METRO_AMS_CERT_DIR``) naming the test's
stack. Shell blocks run under ``bash -e -o pipefail`` and hand the variables they set to the page's later
blocks, as one shell a reader types into would. Every block must exit 0, on the first pass and again on a
second pass over the same stack: the examples say they can run twice. The comments that mark a block not to
run, or to run in keys mode, or in the background until its output shows a given text, or against a stack started
with the page's declaration file (METRO_INIT, docs/init.md), are read by tests/doc_blocks.py.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests import doc_blocks
from tests.doc_blocks import Block
from tests.stack import RunningStack, start_stack

BLOCK_TIMEOUT = 180  # seconds one block may take
PASSES = 2


def _to_run(page: Path) -> list[Block]:
    return [b for b in doc_blocks.blocks(page) if b.runnable and b.skip is None]


PAGES = [p for p in doc_blocks.pages() if _to_run(p)]


class Stacks:
    """The open-mode stack, and a keys-mode one started the first time a block asks for it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.admin_key = secrets.token_urlsafe(32)
        self.running: dict[str, RunningStack] = {}

    def get(self, mode: str, init: Path | None = None) -> RunningStack:
        """The stack of ``mode``; with ``init``, one started with METRO_INIT naming that file (docs/init.md)."""
        key = f"{mode}:{init or ''}"
        if key not in self.running:
            extra = {"METRO_AUTH": "keys", "METRO_ADMIN_KEY": self.admin_key} if mode == "keys" else {}
            if init is not None:
                extra["METRO_INIT"] = str(init)
            self.running[key] = start_stack(self.tmp / f"metro-{mode}-{len(self.running)}.log", extra_env=extra)
        return self.running[key]

    def init_file(self, page: Path, name: str) -> Path:
        """The page's block named ``name``, written where the stack started with it reads it."""
        path = self.tmp / f"{page.stem}-{name}"
        if not path.exists():
            path.write_text(doc_blocks.named_block(page, name).code)
        return path

    def variables(self, mode: str, init: Path | None = None) -> dict[str, str]:
        """What `make run` reads, naming this stack."""
        stack = self.get(mode, init)
        out = {"METRO_PORT": str(urlsplit(stack.url).port), "METRO_AMS_PORT": stack.ams_host.rsplit(":", 1)[1],
               "METRO_EMULATOR_PORT": str(urlsplit(stack.emulator_url).port),
               "METRO_AMS_CERT_DIR": str(Path(stack.ams_cert).parent)}
        if mode == "keys":
            out["METRO_ADMIN_KEY"] = self.admin_key
        return out

    def stop(self) -> None:
        for stack in self.running.values():
            stack.stop()


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stacks]:
    running = Stacks(tmp_path_factory.mktemp("readme-stacks"))
    yield running
    running.stop()


def _reader_env() -> dict[str, str]:
    """The reader's shell: this interpreter's environment (its bin first, as `.venv/bin/python` is), without
    the variable that would turn google-cloud-pubsub to gRPC."""
    env = {k: v for k, v in os.environ.items() if k != "PUBSUB_EMULATOR_HOST"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _read_state(path: Path) -> dict[str, str]:
    pairs = (entry.split("=", 1) for entry in path.read_text().split("\0") if "=" in entry)
    return {k: v for k, v in pairs if not k.startswith("BASH_FUNC_")}


def _command(block: Block, workdir: Path, state_file: Path) -> list[str]:
    script = workdir / block.file_name
    if block.lang == "python":
        script.write_text(block.code)
        return [sys.executable, str(script)]
    # `set -a`: what the block assigns reaches the later blocks, as in the reader's one shell.
    script.write_text(f"set -a\n{block.code}\nenv -0 > {str(state_file)!r}\n")
    return ["bash", "-e", "-o", "pipefail", str(script)]


def _report(block: Block, code: int | None, out: str, err: str) -> str:
    return f"{block.where} ({block.lang}) exited {code}\n--- code\n{block.code}--- stdout\n{out}--- stderr\n{err}"


@dataclass
class Background:
    block: Block
    process: subprocess.Popen[bytes]
    output: Path

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            if text in self.output.read_text(errors="replace"):
                return True
            time.sleep(0.2)
        return text in self.output.read_text(errors="replace")

    def stop(self) -> str:
        """Stop it; what went wrong, or "" when it was still running and showed what it should."""
        missing = [text for text in self.block.expects if not self.wait_for(text)]
        code = self.process.poll()
        self.process.terminate()
        self.process.wait(timeout=10)
        if code is None and not missing:
            return ""
        why = f"ended early ({code})" if code is not None else f"never showed {missing}"
        return f"background {self.block.where} {why}\n--- output\n{self.output.read_text(errors='replace')}"


def _start(block: Block, command: list[str], workdir: Path, env: dict[str, str]) -> Background:
    output = workdir / f"{block.file_name}.out"
    with output.open("wb") as sink:
        process = subprocess.Popen(command, cwd=workdir, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=sink,
                                   stderr=subprocess.STDOUT)
    _wait_listening(block.code, process)
    return Background(block, process, output)


_LISTENS = re.compile(r"listens on https?://([\d.]+):(\d+)")


def _wait_listening(code: str, process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Until the port a background block says it listens on accepts connections (or the block ends)."""
    found = _LISTENS.search(code)
    if found is None:
        return
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection((found.group(1), int(found.group(2))), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)


def _run_pass(page: Path, stacks: Stacks, workdir: Path) -> list[str]:
    """One pass over the page's blocks; returns the ones skipped for a missing command."""
    states: dict[str, dict[str, str]] = {}
    background: list[Background] = []
    skipped = []
    try:
        for block in _to_run(page):
            missing = [c for c in block.needs if shutil.which(c) is None]
            if missing:
                skipped.append(f"{block.where} (needs {', '.join(missing)})")
                continue
            mode = "keys" if "keys" in block.options else "open"
            init = stacks.init_file(page, block.init) if block.init else None
            shell = f"{mode}-{block.init}" if init else mode
            state_file = workdir / f".state-{shell}"
            env = {**states.get(shell, _reader_env()), **stacks.variables(mode, init)}
            command = _command(block, workdir, state_file)
            if "background" in block.options:
                background.append(_start(block, command, workdir, env))
                continue
            done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=BLOCK_TIMEOUT, check=False)
            assert done.returncode == 0, _report(block, done.returncode, done.stdout, done.stderr)
            if block.lang == "sh":
                states[shell] = _read_state(state_file)
    finally:
        problems = [p for p in (b.stop() for b in background) if p]
    assert not problems, "\n".join(problems)
    return skipped


@pytest.mark.timeout(900)
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(doc_blocks.ROOT)))
def test_the_page_s_examples_run_twice(page: Path, stacks: Stacks, tmp_path: Path) -> None:
    skipped: list[str] = []
    for _ in range(PASSES):
        skipped = _run_pass(page, stacks, tmp_path)
    if skipped:
        pytest.skip("ran all but " + "; ".join(skipped))
