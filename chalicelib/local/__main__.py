"""``python -m chalicelib.local``: run Metro on this machine (``make run``)."""

from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import sys

import typer

from chalicelib.config import LocalConfig
from chalicelib.local.probe import listening

cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


class PortInUse(Exception):
    """A port the stack needs is taken, most often by another ``make run``."""

    def __init__(self, port: int, role: str, variable: str) -> None:
        super().__init__(f"Port {port} ({role}) is in use, probably by another `make run`. Stop it, or set "
                         f"{variable} to a free port, e.g. {variable}={port + 1} make run")


def require_free_port(host: str, port: int, role: str, variable: str) -> None:
    """Raise PortInUse if something listens on host:port (the servers bind with SO_REUSEADDR, as this probe does)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUse(port, role, variable) from exc
            raise


def require_free_ports(aws: bool) -> None:
    """Check the ports before anything starts: moto's server thread would otherwise wait forever on a taken port."""
    local = LocalConfig()
    require_free_port(local.host, local.port, "the Metro API", "METRO_PORT")
    require_free_port(local.host, local.ams_port, "the AMS dialect's HTTPS endpoint", "METRO_AMS_PORT")
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not aws and not (endpoint and listening(endpoint)):
        require_free_port("127.0.0.1", local.emulator_port, "the AWS emulator", "METRO_EMULATOR_PORT")


@cli.command()
def main(
    aws: bool = typer.Option(False, "--aws", help="Use real AWS (credentials from the environment), no emulator."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every request."),
) -> None:
    """Start the AWS emulator, create Metro's resources, serve the API and run the trigger pump."""
    try:
        require_free_ports(aws)
    except PortInUse as exc:
        print(f"Metro cannot start: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s %(name)s %(message)s")
    for noisy in ("botocore", "urllib3", "werkzeug", "moto"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from chalicelib.local.server import Stack  # after the port check: importing the app takes seconds

    try:
        stack = Stack(use_aws=aws)
    except RuntimeError as exc:  # a configuration Metro refuses to start with: say why, no traceback
        print(f"Metro cannot start: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)

    def stop(*_: object) -> None:
        print("Metro stopping", flush=True)
        stack.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)  # Ctrl-C, also when started where SIGINT was ignored
    try:
        stack.serve()
    except KeyboardInterrupt:
        stop()


if __name__ == "__main__":
    cli()
