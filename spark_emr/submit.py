"""Run a job with spark-submit on local[2] against the embedded stack (``make compact`` and friends).

    python -m spark_emr.submit compact   [--min-age-seconds 0 ...]
    python -m spark_emr.submit retention [--retention-seconds 86400 ...]
    python -m spark_emr.submit metrics
    python -m spark_emr.submit replay --subscription projects/p/subscriptions/s --start T0 --end T1

The jobs talk to the AWS emulator that ``make run`` serves on 127.0.0.1:$METRO_EMULATOR_PORT (4566 unless set;
or to ``AWS_ENDPOINT_URL``); Spark's Python workers are separate processes, so the emulator must be a
server, which it is. Bucket and messages table come from Metro's configuration (``METRO_BUCKET``,
``METRO_MESSAGES_TABLE``). For replay, ``--subscription`` stands for the subscription's topic, queue
URL and filter, read from the resources table. Anything else is passed to the job unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the project root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from chalicelib.local.probe import listening

JOBS = ("compact", "retention", "metrics", "replay")
ROOT = Path(__file__).resolve().parent.parent
FAKE_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def endpoint() -> str:
    from chalicelib.config import LocalConfig

    return os.environ.get("AWS_ENDPOINT_URL") or f"http://127.0.0.1:{LocalConfig().emulator_port}"


def no_stack(url: str, job: str) -> int:
    from chalicelib.config import LocalConfig

    local = LocalConfig()
    print(
        f"No AWS emulator answers at {url}.\n"
        f"`make {job}` works on the data of the embedded stack: start it in another terminal with\n"
        "    make run\n"
        f"publish some messages (the API is on http://{local.host}:{local.port}), then run `make {job}` again.\n"
        "Another endpoint (a LocalStack, a moto server) can be given with AWS_ENDPOINT_URL=...",
        file=sys.stderr,
    )
    return 2


def take_option(args: list[str], name: str) -> tuple[str, list[str]]:
    """Remove ``name VALUE`` (or ``name=VALUE``) from args; return the value ('' if absent)."""
    out: list[str] = []
    value = ""
    it = iter(args)
    for a in it:
        if a == name:
            value = next(it, "")
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
        else:
            out.append(a)
    return value, out


def replay_args(args: list[str]) -> list[str]:
    """``--subscription NAME`` -> ``--topic``, ``--queue-url`` and (unless given) ``--filter`` of that
    subscription, read from the resources table."""
    sub, rest = take_option(args, "--subscription")
    if not sub:
        return rest
    from chalicelib.config import Config
    from chalicelib.core import names
    from chalicelib.store.resources import ResourceStore
    from chalicelib.store.workers import Workers

    rec = ResourceStore(Config(), Workers()).require_subscription(names.parse(sub, "subscriptions"))
    extra = ["--topic", rec.spec.topic, "--queue-url", rec.queue_url]
    if rec.spec.filter and "--filter" not in rest:
        extra += ["--filter", rec.spec.filter]
    return extra + rest


def command(job: str, args: list[str], master: str) -> list[str]:
    from chalicelib.config import Config

    config = Config()
    spark_submit = Path(sys.executable).parent / "spark-submit"
    script = ROOT / "spark_emr" / f"{job}.py"
    base = [str(spark_submit), "--master", master, "--conf", "spark.log.level=WARN", str(script)]
    base += ["--bucket", config.bucket]
    if job in ("compact", "retention", "replay"):
        base += ["--messages-table", config.messages_table]
    if job == "compact" and "--resources-table" not in args:  # topics that have nothing in S3 yet
        base += ["--resources-table", config.resources_table]
    return base + args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in JOBS:
        print(__doc__, file=sys.stderr)
        return 2
    job, args = argv[0], argv[1:]
    master, args = take_option(args, "--master")
    url = endpoint()
    if not listening(url):
        return no_stack(url, job)
    for k, v in FAKE_AWS.items():
        os.environ.setdefault(k, v)
    os.environ["AWS_ENDPOINT_URL"] = url
    os.environ["AWS_ACCOUNT_ID_ENDPOINT_MODE"] = "disabled"
    if job == "replay":
        from chalicelib.core.errors import MetroError

        try:
            args = replay_args(args)
        except MetroError as err:
            print(f"replay: {err.message}", file=sys.stderr)
            return 2
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "METRO_SPARK_PROGRESS": os.environ.get("METRO_SPARK_PROGRESS", "true")}
    cmd = command(job, args, master or "local[2]")
    print(f"{job}: spark-submit --master {master or 'local[2]'} against {url}", file=sys.stderr, flush=True)
    return subprocess.call(cmd, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
