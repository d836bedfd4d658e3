"""The pages' examples and links, checked without a stack: every comment that says how an example runs is one
tests/e2e/test_readme.py can follow, every example at least parses, the versions the pages name are the pinned
ones, relative links lead somewhere, and the README's first screen holds what a newcomer needs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests import doc_blocks

BLOCKS = doc_blocks.all_blocks()
RUNNABLE = [b for b in BLOCKS if b.runnable]
README = doc_blocks.ROOT / "README.md"


def test_the_pages_have_examples_and_most_of_them_run() -> None:
    assert any(b.page == "README.md" and b.lang == "python" and b.skip is None for b in RUNNABLE)
    assert len([b for b in RUNNABLE if b.skip is None]) >= 10


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_every_example_is_run_or_says_why_not(block: doc_blocks.Block) -> None:
    assert not block.problems, f"{block.where}: {'; '.join(block.problems)}"
    assert block.skip is None or block.skip.strip(), f"{block.where}: `not run:` without a reason"
    assert not (block.skip and block.options), f"{block.where}: both run and not run"


def test_no_directive_stands_apart_from_a_block() -> None:
    assert [s for p in doc_blocks.pages() for s in doc_blocks.stray_directives(p)] == []
    marked = [b.where for b in BLOCKS if not b.runnable and (b.skip or b.options)]
    assert marked == [], "run/not run comments on blocks that are never run (json, plain text)"


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_every_example_parses(block: doc_blocks.Block, tmp_path: Path) -> None:
    if block.lang == "python":
        compile(block.code, block.where, "exec")
        return
    script = tmp_path / "block.sh"
    script.write_text(block.code)
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{block.where}: {done.stderr}"


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for name in ("requirements.txt", "requirements-run.txt", "requirements-dev.txt"):
        for line in (doc_blocks.ROOT / name).read_text().splitlines():
            found = re.match(r"^([A-Za-z0-9_.\[\]-]+)==(\S+)", line)
            if found:
                pins[found.group(1).split("[")[0].lower()] = found.group(2)
    return pins


def test_the_versions_the_pages_name_are_the_pinned_ones() -> None:
    pins = _pins()
    wrong = []
    for page in doc_blocks.pages():
        for name, version in re.findall(r"\b([a-z][a-z0-9-]+)==(\d[\w.]*)", page.read_text()):
            if name.lower() in pins and pins[name.lower()] != version:
                wrong.append(f"{page.name}: {name}=={version}, pinned {pins[name.lower()]}")
    assert wrong == []


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.*)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_relative_links_lead_to_a_file_and_a_heading() -> None:
    broken = []
    for page in doc_blocks.pages():
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_readme_s_first_screen_starts_a_newcomer() -> None:
    lines = README.read_text().splitlines()
    first = "\n".join(lines[:60])
    for needed in ("make run", "make clients", "subscribe(", "docs/README.md", "gRPC", "PUBSUB_EMULATOR_HOST"):
        assert needed in first, f"the README's first 60 lines do not mention {needed}"
    quickstart = next(b for b in BLOCKS if b.page == "README.md" and b.lang == "python")
    assert quickstart.line + quickstart.code.count("\n") <= 60
    assert len(lines) < 120, "the README is a front door: the rest belongs in docs/"
