"""Policy as code over the merged app template: the SAM transform (aws-sam-translator, as CloudFormation expands the
template), then checkov with Metro's rules only (infra/checkov_rules/: tracing on every function and API stage, a
retention on every log group, an action on every alarm, access logs without the query string on every stage, every
function on the dashboard and with its log group).

It runs in its own venv, ``.venv-checkov`` (requirements-checkov.txt: checkov pins boto3, botocore and packaging
below the dev pins), which ``make test`` installs:

    .venv-checkov/bin/python -m infra.policy_check merged.json [other.json ...]

Prints one JSON object, ``{"passed": {check id: count}, "failed": [{"file", "check_id", "resource"}]}``, and exits 1
when a rule fails (tests/package/test_template_policies.py reads it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CHECKS_DIR = Path(__file__).resolve().parent / "checkov_rules"
CHECK_IDS = ("CKV_METRO_1", "CKV_METRO_2", "CKV_METRO_3", "CKV_METRO_4", "CKV_METRO_5", "CKV2_METRO_1",
             "CKV2_METRO_2")


class _NoManagedPolicies:
    """The transform asks IAM for managed policy ARNs only for policy names a function lists: Metro's list none."""

    def load(self) -> dict[str, str]:
        return {}


def transformed(template: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # the pseudo parameters need a region, any region
    from samtranslator.translator.transform import transform  # .venv-checkov only

    out: dict[str, Any] = transform(template, {}, _NoManagedPolicies())
    return out


def check(paths: list[Path]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="metro-policy-") as workdir:
        for path in paths:
            Path(workdir, path.name).write_text(json.dumps(transformed(json.loads(path.read_text()))))
        checkov = Path(sys.executable).parent / "checkov"
        done = subprocess.run(
            [str(checkov), "-d", workdir, "--framework", "cloudformation", "--external-checks-dir", str(CHECKS_DIR),
             "--check", ",".join(CHECK_IDS), "--output", "json", "--skip-download", "--compact"],
            capture_output=True, text=True, check=False, timeout=600,
            env={**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"})
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"checkov failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    results = report.get("results", {}) if isinstance(report, dict) else {}
    passed: dict[str, int] = {}
    for item in results.get("passed_checks", []):
        passed[item["check_id"]] = passed.get(item["check_id"], 0) + 1
    failed = [{"file": Path(item["file_path"]).name, "check_id": item["check_id"], "resource": item["resource"]}
              for item in results.get("failed_checks", [])]
    return {"passed": passed, "failed": sorted(failed, key=lambda f: (f["file"], f["check_id"], f["resource"]))}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    found = check([Path(a) for a in argv])
    print(json.dumps(found, indent=1))
    return 1 if found["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
