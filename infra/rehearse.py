"""The rehearsal: deploy the packaged artifact into a local AWS emulator and drive it end to end.

    python -m infra.rehearse [--endpoint http://localhost:4566] [--stage dev]

Without ``--endpoint`` (or ``REHEARSE_ENDPOINT``) it starts ministack, an emulator that runs Lambda functions
(Python ones as local worker processes, no Docker) and event source mappings, from its own venv
(``.venv-rehearse``, requirements-rehearse.txt) on a free port of 127.0.0.1, and stops it at the end. With an
endpoint (LocalStack, say) it uses that one and leaves it running.

Then, all against the emulator (``AWS_ENDPOINT_URL`` and dummy credentials: never real AWS):

1. ``python -m infra.deploy deploy --stage STAGE``, the very command and templates of ``make deploy``
   (storage stack, SSM secrets, ``chalice package`` merged by infra/template.py, the pyarrow layer, the app
   stack with API Gateway, the four functions and the stream mapping);
2. the same command again, which must exit 0 and say "no changes"; then ``destroy`` and ``deploy`` once more,
   which must succeed beside what the destroy kept (tables, bucket, the fan-out DLQ);
3. the gRPC edge's container entry point (``python -m chalicelib.container``, the command of infra/grpc/Dockerfile)
   as a process, in the environment the gRPC stack gives its task (infra/grpc_stack.container_environment, resolved
   for the emulator's account and region) but for its port and the emulator's endpoint;
4. the end-to-end tests of tests/rehearsal/ against the stage's API Gateway URL and that gRPC edge with Google's
   clients, in the deployed configuration (``METRO_AUTH=keys``, secrets from SSM);
5. SIGTERM to the gRPC edge, which must stop within its grace period and exit 0, as ECS stops a task;
6. with ministack (not an endpoint given), the IAM gate over the AWS calls the deployed functions made, recorded by
   each function (``METRO_IAM_RECORD`` in the workers' environment): a call its policy does not allow fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from infra import grpc_stack

ROOT = Path(__file__).resolve().parents[1]
MINISTACK_PYTHON = ROOT / ".venv-rehearse" / "bin" / "python"
REGION = "us-east-1"
# Credentials the emulator accepts; set explicitly so that no credentials of the caller's reach any command.
EMULATOR_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": ""}
_ENDPOINT_OUTPUT = re.compile(r"^endpoint: (\S+)\s*$", re.M)

cli = typer.Typer(add_completion=False, help="Deploy the packaged artifact into a local emulator and test it.")


def say(text: str) -> None:
    typer.echo(f"==> {text}", err=True)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def emulator_environment(endpoint: str) -> dict[str, str]:
    """The environment of every command run against the emulator: its endpoint, dummy credentials, one region,
    and none of the caller's AWS or Metro settings (a profile or METRO_AUTH must not leak into the rehearsal)."""
    kept = {k: v for k, v in os.environ.items()
            if not k.startswith(("AWS_", "METRO_", "PUBSUB_EMULATOR_HOST"))}
    return {**kept, **EMULATOR_CREDENTIALS, "AWS_ENDPOINT_URL": endpoint, "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION}


def wait_until_up(url: str, process: subprocess.Popen[Any] | None, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the emulator exited early:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/_localstack/health", timeout=2):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the emulator at {url} did not answer within {timeout:.0f} s")


def iam_calls_dir(workdir: Path) -> Path:
    """Where the deployed functions record their AWS calls (METRO_IAM_RECORD, chalicelib/store/call_record.py)."""
    return workdir / "iam-calls"


@contextlib.contextmanager
def ministack(workdir: Path) -> Iterator[str]:
    """ministack on a free port of 127.0.0.1 for the duration; its URL."""
    if not MINISTACK_PYTHON.exists():
        raise typer.BadParameter(f"{MINISTACK_PYTHON} is missing: `make rehearse` installs it")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = workdir / "ministack.log"
    # The functions' worker processes inherit this environment under their own variables: nothing of the
    # caller's AWS or Metro settings goes in.
    scratch = workdir / "tmp"  # each function worker unpacks its code and layer here (~170 MB): removed at the end
    scratch.mkdir()
    calls = iam_calls_dir(workdir)
    calls.mkdir()
    # ministack's function workers inherit its environment: the deployed functions record their calls for the IAM
    # gate, which checks them against each function's policy at the end (a call not allowed fails the rehearsal).
    env = {**emulator_environment(url), "GATEWAY_PORT": str(port), "BIND_HOST": "127.0.0.1",
           "MINISTACK_REGION": REGION, "LOG_LEVEL": "WARNING", "TMPDIR": str(scratch), "METRO_IAM_RECORD": str(calls)}
    for name in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        env.pop(name)
    say(f"starting ministack on {url} (log: {log})")
    with log.open("w") as out:
        process = subprocess.Popen([str(MINISTACK_PYTHON), "-m", "ministack"], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_up(url, process, log)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)  # ministack and the function workers it started
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def run_deploy(endpoint: str, stage: str, command_name: str = "deploy", front_door: str = "http") -> str:
    """``python -m infra.deploy deploy`` (or ``destroy``) against the emulator; its standard output (shown as it
    goes)."""
    command = [sys.executable, "-m", "infra.deploy", command_name, "--stage", stage, "--region", REGION]
    if command_name == "deploy":
        command += ["--front-door", front_door]
    done = subprocess.run(command, cwd=ROOT, env=emulator_environment(endpoint), stdout=subprocess.PIPE,
                          text=True, check=False)
    typer.echo(done.stdout, nl=False)
    if done.returncode != 0:
        raise typer.Exit(done.returncode)
    return done.stdout


def api_url(endpoint: str, deploy_output: str) -> str:
    """The stage's API Gateway URL on the emulator, as the deploy printed it."""
    found = _ENDPOINT_OUTPUT.search(deploy_output)
    if not found or not found.group(1).startswith(endpoint.rstrip("/") + "/"):
        raise RuntimeError(f"the deploy printed no API Gateway endpoint on {endpoint}:\n{deploy_output}")
    return found.group(1)


def emulator_account(endpoint: str) -> str:
    import boto3

    sts = boto3.client("sts", endpoint_url=endpoint, region_name=REGION,
                       aws_access_key_id=EMULATOR_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                       aws_secret_access_key=EMULATOR_CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
    return str(sts.get_caller_identity()["Account"])


def grpc_edge_environment(endpoint: str, stage: str, port: int) -> dict[str, str]:
    """What the gRPC stack gives its task (the API function's environment and the edge's settings), resolved for the
    emulator's account and region; only the port and the emulator's endpoint and credentials differ."""
    task = grpc_stack.container_environment(grpc_stack.Settings(stage, image="rehearsal"))
    return {**emulator_environment(endpoint), **grpc_stack.resolved(task, emulator_account(endpoint), REGION),
            "METRO_GRPC_PORT": str(port)}


class GrpcEdgeProcess:
    """``python -m chalicelib.container`` against the emulator, its output in ``log``."""

    LISTENING = "Metro gRPC edge listening"

    def __init__(self, endpoint: str, stage: str, log: Path) -> None:
        self.port = free_port()
        self.log = log
        env = grpc_edge_environment(endpoint, stage, self.port)
        self.grace = float(env["METRO_GRPC_GRACE_SECONDS"])
        with log.open("w") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "chalicelib.container"], cwd=ROOT, env=env,
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def wait_until_listening(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.LISTENING in self.log.read_text():
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"the gRPC edge exited ({self.process.returncode}):\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"the gRPC edge did not listen within {timeout:.0f} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> bool:
        """SIGTERM, as ECS stops a task: whether it exited 0 within the grace period and the container's stop
        timeout (after which ECS would send SIGKILL)."""
        if self.process.poll() is not None:
            return False
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=grpc_stack.STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            return False
        return code == 0


def rehearse(endpoint: str, stage: str, pytest_args: list[str], front_door: str = "http") -> int:
    started = time.monotonic()
    say(f"deploy stage {stage} into {endpoint} behind {front_door.upper()} APIs (make deploy's command and templates)")
    run_deploy(endpoint, stage, front_door=front_door)
    say("deploy again: nothing may change")
    second = run_deploy(endpoint, stage, front_door=front_door)
    if "no changes:" not in second:
        say("FAILED: the second deploy changed the stage")
        return 1
    say("destroy the stage (its data stays), then deploy it again: what a destroy keeps must not block the deploy")
    run_deploy(endpoint, stage, "destroy")
    third = run_deploy(endpoint, stage, front_door=front_door)
    url = api_url(endpoint, third)
    logs = Path(tempfile.mkdtemp(prefix="metro-grpc-edge-"))
    edge = GrpcEdgeProcess(endpoint, stage, logs / "grpc-edge.log")
    try:
        edge.wait_until_listening()
        say(f"deployed in {time.monotonic() - started:.0f} s; the gRPC edge's entry point listens on {edge.host}; "
            f"end-to-end tests against {url} and {edge.host}")
        env = {**emulator_environment(endpoint), "METRO_REHEARSAL_URL": url, "METRO_REHEARSAL_STAGE": stage,
               "METRO_REHEARSAL_GRPC": edge.host}
        tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/rehearsal",
                                *pytest_args], cwd=ROOT, env=env, check=False)
    finally:
        stopping = time.monotonic()
        stopped = edge.stop()
    code = tests.returncode
    if stopped:
        say(f"the gRPC edge stopped on SIGTERM in {time.monotonic() - stopping:.1f} s and exited 0")
        shutil.rmtree(logs, ignore_errors=True)
    else:
        say(f"FAILED: the gRPC edge did not stop cleanly on SIGTERM (log kept: {edge.log})")
        code = code or 1
    say(f"rehearsal {'passed' if code == 0 else 'FAILED'} in {time.monotonic() - started:.0f} s")
    return code


def deployed_calls_allowed(calls: Path) -> int:
    """The IAM gate over the calls the deployed functions made (a part of what the full test run covers, so only
    calls not allowed count): 0 when every one is allowed."""
    if not any(calls.glob("calls-*.jsonl")):
        say(f"FAILED: the deployed functions recorded no AWS call under {calls}")
        return 1
    done = subprocess.run([sys.executable, "-m", "infra.iam_gate", "--denied-only", str(calls)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    say(done.stdout.splitlines()[0] if done.stdout else done.stderr[-2000:])
    if done.returncode != 0:
        typer.echo(done.stdout, err=True)
    return done.returncode


@cli.command()
def main(
    endpoint: str = typer.Option("", envvar="REHEARSE_ENDPOINT",
                                 help="an emulator already running (LocalStack: http://localhost:4566); "
                                      "default: start ministack"),
    stage: str = typer.Option("dev", help="the stage of .chalice/config.json to deploy"),
    front_door: str = typer.Option("http", envvar="REHEARSE_FRONT_DOOR",
                                   help="http (make deploy's default) or rest, as infra.deploy's --front-door"),
    pytest_args: list[str] = typer.Argument(None, help="more pytest arguments, e.g. -x -k push"),
) -> None:
    """Deploy twice (the second must change nothing), then run tests/rehearsal/ against the deployed API."""
    if endpoint:
        raise typer.Exit(rehearse(endpoint, stage, pytest_args or [], front_door))
    workdir = Path(tempfile.mkdtemp(prefix="metro-rehearse-"))
    with ministack(workdir) as url:
        code = rehearse(url, stage, pytest_args or [], front_door)
    code = code or deployed_calls_allowed(iam_calls_dir(workdir))
    if code == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        say(f"the emulator's log is kept: {workdir / 'ministack.log'}")
    raise typer.Exit(code)


if __name__ == "__main__":
    cli()
