"""The fenced code blocks of Metro's pages (README.md and docs/*.md), and how a test runs them.

A ``python`` or shell (``sh``, ``bash``, ``shell``) block is an example a reader runs, so the test runs it
against a real stack (tests/e2e/test_readme.py) unless the HTML comment on the line just before its fence says
otherwise:

- ``<!-- not run: REASON -->``: never run (it deploys, starts the stack the test starts itself, serves until
  stopped, ...). The reason is required.
- ``<!-- run: OPTION, OPTION -->``: run, with options: ``keys`` (against a stack in keys mode, whose admin token
  is in ``METRO_ADMIN_KEY``), ``background`` (started and left running while the page's later blocks run, then
  stopped; it must still be running by then), ``expect TEXT`` (with ``background``: before it is stopped, its
  output must show TEXT within a minute), ``needs COMMAND`` (skipped when COMMAND is not installed), ``init FILE``
  (against a stack started with ``METRO_INIT`` naming FILE: the page's block, YAML, whose first line is
  ``# FILE``, docs/init.md).

Other comments (the benchmark table's markers, for one) are not directives. Blocks of other languages (json,
plain text) are never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = {"python": "python", "py": "python", "sh": "sh", "bash": "sh", "shell": "sh"}
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<kind>not run|run)\s*(?::(?P<text>.*?))?\s*-->\s*$")
_NAMED = re.compile(r"^#\s*(?P<name>[\w.-]+\.py)\s*:")
_OPTION = re.compile(r"keys|background|expect [^,]+|needs [\w.-]+|init [\w.-]+")


@dataclass(frozen=True)
class Block:
    page: str  # the page's path from the repository root
    line: int  # the line of the opening fence (1-based)
    lang: str  # "python" or "sh" for the runnable ones, else the fence's word
    code: str
    skip: str | None = None  # the reason a `not run:` comment gives
    options: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default=())  # a directive the test cannot follow

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.lang in ("python", "sh")

    @property
    def needs(self) -> tuple[str, ...]:
        return tuple(o.split(" ", 1)[1] for o in self.options if o.startswith("needs "))

    @property
    def expects(self) -> tuple[str, ...]:
        return tuple(o.split(" ", 1)[1] for o in self.options if o.startswith("expect "))

    @property
    def init(self) -> str:
        """The declaration file (METRO_INIT) of the stack it runs against, or ""."""
        return next((o.split(" ", 1)[1] for o in self.options if o.startswith("init ")), "")

    @property
    def names(self) -> str:
        """The file a block of any language says it is, by its first line (``# metro-init.yaml: ...``), or ""."""
        found = re.match(r"^#\s*(?P<name>[\w.-]+\.\w+)\s*(?::|$)", self.code.lstrip().split("\n", 1)[0])
        return found.group("name") if found else ""

    @property
    def file_name(self) -> str:
        """The name its first line gives (``# quickstart.py: ...``), else one made from its line."""
        first = self.code.lstrip().split("\n", 1)[0]
        named = _NAMED.match(first) if self.lang == "python" else None
        return named.group("name") if named else f"block-{self.line}.{'py' if self.lang == 'python' else 'sh'}"


def pages() -> list[Path]:
    """README.md and the pages of docs/ (the decision records under docs/decisions/ are history, not run)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _directive(line: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]] | None:
    """(skip reason, options, problems) of a directive comment, or None for any other line."""
    found = _DIRECTIVE.match(line)
    if found is None:
        return None
    text = (found.group("text") or "").strip()
    if found.group("kind") == "not run":
        return (text, (), ()) if text else (None, (), ("`not run:` needs a reason",))
    options = tuple(o.strip() for o in text.split(",") if o.strip())
    bad = tuple(f"unknown option {o!r}" for o in options if not _OPTION.fullmatch(o))
    return None, options, bad


def blocks(path: Path) -> list[Block]:
    lines = path.read_text().split("\n")
    page = str(path.relative_to(ROOT))
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening.group("indent"), opening.group("fence")
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        directive = _directive(before) or (None, (), ())
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        code = "\n".join(line.removeprefix(indent) for line in lines[i + 1:end]) + "\n"
        lang = opening.group("lang").lower()
        out.append(Block(page, i + 1, LANGUAGES.get(lang, lang), code, *directive))
        i = end + 1
    named = {b.names for b in out}
    return [replace(b, problems=(*b.problems, f"no block of the page is {b.init}")) if b.init and b.init not in named
            else b for b in out]


def named_block(path: Path, name: str) -> Block:
    """The page's block whose first line names it ``name`` (an ``init FILE`` option's file)."""
    return next(b for b in blocks(path) if b.names == name)


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def stray_directives(path: Path) -> list[str]:
    """Directive comments that are not on the line just before a fence (blank lines aside): they mark nothing."""
    lines = path.read_text().split("\n")
    out, fence = [], ""
    for i, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence:  # inside a block: its text is an example, not a directive
            fence = "" if line.strip().startswith(fence) else fence
            continue
        if opening is not None:
            fence = opening.group("fence")
            continue
        if _directive(line) is None:
            continue
        following = next((lines[j] for j in range(i + 1, len(lines)) if lines[j].strip()), "")
        if _FENCE.match(following) is None:
            out.append(f"{path.relative_to(ROOT)}:{i + 1}")
    return out
