"""``python -m chalicelib.local``: run Metro on this machine (``make run``)."""

from __future__ import annotations

import logging
import signal
import sys

import typer

from chalicelib.local.server import Stack

cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@cli.command()
def main(
    aws: bool = typer.Option(False, "--aws", help="Use real AWS (credentials from the environment), no emulator."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log every request."),
) -> None:
    """Start the AWS emulator, create Metro's resources, serve the API and run the trigger pump."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(levelname)s %(name)s %(message)s")
    for noisy in ("botocore", "urllib3", "werkzeug", "moto"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    stack = Stack(use_aws=aws)

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
