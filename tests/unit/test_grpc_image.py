"""infra/grpc/Dockerfile, read (no container runtime here to build it): an arm64 base on the functions' Python, the
container package's entry point, a user other than root, the dependencies the functions have at their pins, the
port the stack's target group uses, and no secret in the image."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from infra import grpc_stack, layer

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "infra" / "grpc" / "Dockerfile"
IGNORE = ROOT / "infra" / "grpc" / "Dockerfile.dockerignore"
SECRET_WORDS = re.compile(r"SECRET|PASSWORD|TOKEN|PRIVATE|ADMIN_KEY|SIGNING_KEY|ACCESS_KEY|CREDENTIAL", re.I)


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile: continuation lines joined, comments and parser directives left."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        word, _, rest = whole.partition(" ")
        out.append((word.upper(), rest.strip()))
    assert not pending, "a continuation line ends the file"
    return out


INSTRUCTIONS = instructions(DOCKERFILE.read_text())


def only(kind: str) -> list[str]:
    return [args for word, args in INSTRUCTIONS if word == kind]


def env_of(args: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in shlex.split(args))


def test_the_parser_joins_continuations_and_skips_comments() -> None:
    assert instructions("# c\nFROM a\nRUN x \\\n && y\n\nCMD [\"z\"]\n") == [
        ("FROM", "a"), ("RUN", "x  && y"), ("CMD", '["z"]')]


def test_one_arm64_base_on_the_python_the_functions_run() -> None:
    [base] = only("FROM")
    platform, image = base.split()
    assert platform == "--platform=linux/arm64"  # Graviton: the task definition's RuntimePlatform
    found = re.fullmatch(r"python:(3\.\d+)(?:\.\d+)?-slim(?:-\w+)?", image)
    assert found, image
    lambda_python = layer.LAMBDA_PLATFORM[layer.LAMBDA_PLATFORM.index("--python-version") + 1]
    assert found.group(1) == lambda_python  # the functions' runtime (and the wheels they are built with)
    built = grpc_stack.build(grpc_stack.Settings("dev", "example.org/metro:1"))
    platform_of_task = built["Resources"]["TaskDefinition"]["Properties"]["RuntimePlatform"]
    assert platform_of_task["CpuArchitecture"] == "ARM64"


def test_the_command_is_the_container_packages_entry_point() -> None:
    assert [json.loads(c) for c in only("CMD")] == [["python", "-m", "chalicelib.container"]]
    assert not only("ENTRYPOINT")
    assert (ROOT / "chalicelib" / "container" / "__main__.py").is_file()


def test_it_runs_as_a_user_other_than_root() -> None:
    users = only("USER")
    assert users, "no USER: the container would run as root"
    user = users[-1].split(":")[0]
    assert user.isdigit() and int(user) >= 1000, users  # numeric: a runtime can check it is not root
    copies = [i for i, (word, _) in enumerate(INSTRUCTIONS) if word in ("COPY", "ADD")]
    assert max(copies) < max(i for i, (word, _) in enumerate(INSTRUCTIONS) if word == "USER")
    assert not [a for a in only("COPY") + only("ADD") if "--chown" in a]  # root keeps the code: the user cannot edit it


def test_it_listens_where_the_target_group_sends() -> None:
    env: dict[str, str] = {}
    for args in only("ENV"):
        env.update(env_of(args))
    assert env["METRO_GRPC_PORT"] == str(grpc_stack.GRPC_PORT) == only("EXPOSE")[0]
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"  # the task's root file system is read-only


def test_no_secret_is_baked_in() -> None:
    for word, args in INSTRUCTIONS:
        if word in ("ENV", "ARG", "LABEL"):
            names = [n.split("=", 1)[0] for n in shlex.split(args)]
            assert not [n for n in names if SECRET_WORDS.search(n)], (word, args)
    copied = " ".join(only("COPY") + only("ADD"))
    for sensitive in (".chalice", ".metro", ".env", "infra", "tests", ".venv", ".aws"):
        assert sensitive not in copied.split(), sensitive
    assert not only("ADD")  # no remote fetch, no archive unpacking: COPY only
    assert not re.search(r"METRO_(ACK_SECRET|ADMIN_KEY|PUSH_SIGNING_KEY)|AWS_(ACCESS|SECRET)", DOCKERFILE.read_text())


def test_it_copies_the_code_the_lambda_bundle_carries() -> None:
    copied = [shlex.split(a) for a in only("COPY")]
    sources = {s.rstrip("/") for args in copied for s in args[:-1]}
    assert {"app.py", "chalicelib", "requirements.txt", "requirements-run.txt"} == sources


def _grpc_block() -> set[str]:
    """The packages of requirements-run.txt's gRPC block (from its comment to the end)."""
    lines = (ROOT / "requirements-run.txt").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and "gRPC" in line)
    return {line.split("==")[0] for line in lines[start + 1:] if "==" in line}


def test_the_dependencies_are_the_functions_at_their_pins() -> None:
    run = " ".join(only("RUN"))
    assert "-r requirements.txt" in run
    picked = re.search(r"grep -E '\^\(([^)]*)\)=='", run)
    assert picked, run
    names = set(picked.group(1).split("|"))
    assert names == _grpc_block() | {"boto3", "botocore"}, names  # the gRPC block and Lambda's boto3, pinned
    pinned = {line.split("==")[0] for line in (ROOT / "requirements-run.txt").read_text().splitlines() if "==" in line}
    assert names <= pinned
    assert f"test \"$(wc -l < grpc-edge.txt)\" -eq {len(names)}" in run  # a pin that is gone fails the build
    assert f"pyarrow=={layer.LAYER_PYARROW}" in run  # the functions' layer: bodies read from the archive
    assert "pip install --no-deps \"$(grep -E '^chalice==' requirements-run.txt)\"" in run


def test_the_build_context_sends_only_what_the_image_copies() -> None:
    rules = [line for line in IGNORE.read_text().splitlines() if line and not line.startswith("#")]
    assert rules[0] == "*"
    assert {r[1:].rstrip("/") for r in rules if r.startswith("!")} == {
        "app.py", "chalicelib", "requirements.txt", "requirements-run.txt"}
