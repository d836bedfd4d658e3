"""At each start of the local stack: the resources of METRO_INIT's file and of PUBSUB_PROJECT1..N (docs/init.md),
checked whole and applied idempotently (api/declared.py) before the stack serves."""

from __future__ import annotations

from chalicelib.api import declared
from chalicelib.config import LocalConfig
from chalicelib.core.errors import MetroError
from chalicelib.core.wire.declared import Declaration
from chalicelib.runtime import Services


def apply_at_start(local: LocalConfig, services: Services) -> None:
    """Apply what is declared, printing what was done and, once, the tokens generated for new users; a refused
    entry (or a failure) raises RuntimeError naming the file and the entry: the stack does not start."""
    try:
        declaration = declared.read(local.init_file) if local.init_file else Declaration()
        declaration += declared.from_variables(local.pubsub_projects)
        if declaration == Declaration():
            return
        applied = declared.apply_declaration(declaration, services)
    except MetroError as exc:
        raise RuntimeError(f"declared resources refused: {exc.message}") from None
    for line in applied.lines:
        print(f"Metro declared {line}", flush=True)
    for line in applied.reported:
        print(f"Metro declared {line}: NOT UPDATED", flush=True)
    for user, token in applied.tokens:  # printed here only, once: never logged
        print(f"Metro declared user {user}'s token (shown once, keep it): {token}", flush=True)
