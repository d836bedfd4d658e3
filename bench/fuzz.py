"""`make fuzz`: schemathesis against the real local stack, from Metro's own OpenAPI description (/openapi.json).

For each auth mode (open, and keys with METRO_ADMIN_KEY), a stack starts on free ports (tests/stack.py),
a project, topic, subscription, user and a few messages are created under the names the description gives
as examples, and schemathesis runs every phase (examples, coverage, fuzzing, stateful) over every operation,
positive and negative, with these checks: no 5xx, every status and content type declared, every response
matching its schema, schema-violating requests refused, and (bench/fuzz_checks.py) every error in Google's
envelope with the status that goes with its HTTP code. Keys mode adds that a request without a token is
refused. The figures go to bench/out/fuzz.json; the exit code is non-zero on any failure or too few requests.

    python -m bench.fuzz                    # both modes, 55 examples per operation (over 5,000 requests each)
    python -m bench.fuzz --quick            # about a minute: fewer examples, fuzzing phase only
    python -m bench.fuzz --include 'schemas|snapshots'   # only the operations whose path matches

One schemathesis worker: with two, Hypothesis's lambda descriptions (ast, on Python 3.11) now and then fail
inside schemathesis with "AST constructor recursion depth mismatch", which is schemathesis's error, not Metro's.
"""

from __future__ import annotations

import collections
import json
import os
import secrets
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import typer

from bench.fuzz_seed import seed
from chalicelib.api import registry
from tests.stack import ROOT, RunningStack, start_stack

OUT = ROOT / "bench" / "out"
# Failures accepted as schemathesis's, not Metro's, each with its reason (bench/fuzz-baseline.json, "reason").
BASELINE = ROOT / "bench" / "fuzz-baseline.json"
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,"
          "negative_data_rejection,google_error_envelope")


@dataclass
class ModeResult:
    mode: str
    requests: int = 0
    operations: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    server_errors: int = 0
    exit_code: int = 0
    seconds: float = 0.0
    summary: str = ""


def run_schemathesis(stack: RunningStack, mode: str, examples: int, quick: bool, seed_value: int,
                     headers: dict[str, str], tally: Path, include: str) -> subprocess.CompletedProcess[str]:
    checks = CHECKS + (",ignored_auth" if mode == "keys" else "")
    command = [str(Path(sys.executable).parent / "schemathesis"), "run", f"{stack.url}/openapi.json",
               "--checks", checks, "--max-examples", str(examples), "--workers", "1", "--seed", str(seed_value),
               "--no-shrink", "--request-timeout", "30", "--suppress-health-check", "all",
               "--phases", "fuzzing" if quick else "examples,coverage,fuzzing,stateful", "--baseline", str(BASELINE)]
    if include:
        command += ["--include-path-regex", include]
    for name, value in headers.items():
        command += ["--header", f"{name}: {value}"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "bench.fuzz_checks", "METRO_FUZZ_TALLY": str(tally),
           "METRO_FUZZ_URL": stack.url, **({"METRO_FUZZ_KEY": headers["x-api-key"]} if "x-api-key" in headers else {})}
    log = OUT / f"fuzz-{mode}.txt"
    print(f"==> schemathesis ({mode} mode, {examples} examples per operation); output in {log}", flush=True)
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            if line.startswith(("  ✅", "  ❌", "  🚫", "API Operations", "Failures", "Test cases", "  Tested",
                                "  ⚠️")) or " generated, " in line:
                print("   ", line.rstrip(), flush=True)
        proc.wait()
    return subprocess.CompletedProcess(command, proc.returncode, log.read_text(), "")


def fuzz_mode(mode: str, examples: int, quick: bool, seed_value: int, include: str = "") -> ModeResult:
    admin_key = secrets.token_urlsafe(32)
    env = {"METRO_AUTH": "keys", "METRO_ADMIN_KEY": admin_key} if mode == "keys" else {}
    headers = {"x-api-key": admin_key} if mode == "keys" else {}
    tally = OUT / f"fuzz-{mode}.tally"
    tally.unlink(missing_ok=True)
    started = time.monotonic()
    stack = start_stack(OUT / f"fuzz-{mode}-metro.log", extra_env=env)
    try:
        seed(stack.url, headers)
        proc = run_schemathesis(stack, mode, examples, quick, seed_value, headers, tally, include)
    finally:
        stack.stop()
    lines = tally.read_text().splitlines() if tally.exists() else []
    statuses = collections.Counter(line.split(" ", 1)[0] for line in lines)
    described = {f"{op.http} {op.url}" for op in registry.METHODS}
    operations = {line.split(" ", 1)[1] for line in lines} & described
    summary = next((line.strip("= ") for line in reversed(proc.stdout.splitlines()) if " in " in line), "")
    return ModeResult(mode, len(lines), len(operations), dict(sorted(statuses.items())),
                      sum(n for s, n in statuses.items() if s.startswith("5")), proc.returncode,
                      round(time.monotonic() - started, 1), summary)


def main(quick: bool = typer.Option(False, help="about a minute: 8 examples per operation, fuzzing phase only"),
         examples: int = typer.Option(0, help="examples per operation (default 55, quick 8)"),
         mode: list[str] = typer.Option(["open", "keys"], help="auth modes to run (open, keys)"),
         seed_value: int = typer.Option(17, "--seed", help="schemathesis's random seed"),
         min_requests: int = typer.Option(0, help="fail below this many requests per mode (default 5000, quick 0)"),
         include: str = typer.Option("", help="only the operations whose path matches this regular expression"),
         ) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    per_operation = examples or (8 if quick else 55)
    floor = min_requests or (0 if quick or include else 5000)
    results = [fuzz_mode(m, per_operation, quick, seed_value, include) for m in mode]
    (OUT / "fuzz.json").write_text(json.dumps([asdict(r) for r in results], indent=1))
    failed = False
    for r in results:
        print(f"{r.mode}: {r.requests} requests over {r.operations} operations in {r.seconds} s, "
              f"statuses {r.statuses}, 5xx: {r.server_errors}; schemathesis: {r.summary or r.exit_code}")
        failed |= r.exit_code != 0 or r.server_errors > 0 or r.requests < floor
    print(f"figures: {OUT / 'fuzz.json'}")
    raise typer.Exit(1 if failed else 0)


if __name__ == "__main__":
    typer.run(main)
