"""The regular expressions of JSON Schema definitions (``pattern``, ``patternProperties``), compiled with RE2.

Python's ``re`` backtracks: ``^(a+)+$`` against 24 a's and a '!' took 0.8 s of CPU, doubling with each further
character, and a regular expression running in C holds the GIL, so no timeout could stop it. RE2 (google-re2)
matches in time linear in the text for every pattern it compiles, and compiles none that would need
backtracking: a backreference or a lookaround refuses the definition. ECMA-262's ``\\uXXXX`` escapes are read as
RE2's ``\\x{XXXX}``; a pattern is searched for anywhere in the text, as JSON Schema says.

Each pattern may use PATTERN_MAX_MEM bytes (its program and DFA cache) and MAX_PATTERN_PROGRAM instructions.
When the DFA cache fills, RE2 falls back to simulating the program, which costs up to one step per instruction
per character: :meth:`Pattern.cost` charges a match for that worst case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2

from chalicelib.core.schemas.invalid import DefinitionInvalid
from chalicelib.core.schemas.limits import (
    MAX_PATTERN_CHARS,
    MAX_PATTERN_PROGRAM,
    PATTERN_MAX_MEM,
    PATTERN_STEPS_PER_UNIT,
)

_HEX = frozenset("0123456789abcdefABCDEF")


def _options() -> Any:
    options = re2.Options()
    options.max_mem = PATTERN_MAX_MEM
    options.log_errors = False  # a refused pattern is the client's error, reported to the client
    options.never_capture = True  # only whether it matches: RE2 can always use its DFA
    return options


_OPTIONS = _options()


@dataclass(frozen=True)
class Pattern:
    """One compiled pattern: ``source`` as the definition writes it."""

    source: str
    program: int  # RE2 instructions
    regexp: Any

    def cost(self, text: str) -> int:
        """Budget units of searching ``text``: the worst case, one step per instruction per character."""
        return 1 + len(text) * self.program // PATTERN_STEPS_PER_UNIT

    def search(self, text: str) -> bool:
        # UTF-8 bytes: a lone surrogate (JSON allows "\ud800") cannot be encoded strictly
        return self.regexp.search(text.encode("utf-8", "surrogatepass")) is not None


def compile_pattern(source: str, where: str) -> Pattern:
    """``source`` compiled, or DefinitionInvalid naming ``where`` in the definition it is and why it is refused."""
    if len(source) > MAX_PATTERN_CHARS:
        raise DefinitionInvalid(f"{where}: a pattern may be at most {MAX_PATTERN_CHARS} characters")
    try:
        regexp = re2.compile(ecma_escapes(source), _OPTIONS)
    except re2.error as exc:
        raise DefinitionInvalid(f"{where}: RE2 cannot compile the pattern {_shown(source)} ({_reason(exc)}); "
                                "patterns are matched in linear time, without backreferences or lookaround, "
                                f"in at most {PATTERN_MAX_MEM // 1024} KiB") from None
    if regexp.programsize > MAX_PATTERN_PROGRAM:
        raise DefinitionInvalid(f"{where}: the pattern {_shown(source)} compiles to {regexp.programsize} "
                                f"instructions (at most {MAX_PATTERN_PROGRAM}); use smaller repetition counts")
    return Pattern(source, regexp.programsize, regexp)


def ecma_escapes(source: str) -> str:
    """``source`` with ECMA-262's ``\\uXXXX`` and ``\\u{X...}`` escapes written as RE2's ``\\x{...}``."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        if source[i] != "\\" or i + 1 == n:
            out.append(source[i])
            i += 1
            continue
        if source[i + 1] == "u" and i + 6 <= n and all(c in _HEX for c in source[i + 2:i + 6]):
            out.append("\\x{" + source[i + 2:i + 6] + "}")
            i += 6
        elif source[i + 1] == "u" and source.startswith("{", i + 2):
            end = source.find("}", i + 3)
            digits = source[i + 3:end] if end > 0 else ""
            if digits and len(digits) <= 6 and all(c in _HEX for c in digits):
                out.append("\\x{" + digits + "}")
                i = end + 1
            else:
                out.append(source[i:i + 2])
                i += 2
        else:
            out.append(source[i:i + 2])  # any other escape, kept whole (so "\\\\u0041" stays a backslash and "u")
            i += 2
    return "".join(out)


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)


def _shown(source: str) -> str:
    return repr(source) if len(source) <= 60 else repr(source[:57] + "...")
