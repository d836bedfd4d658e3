"""The API dialect of an endpoint: Google's Pub/Sub REST v1 or the ARGO Messaging Service's.

The dialect is a property of the endpoint a request arrived at, never guessed from the request: the
endpoint carries the stage variable ``dialect=ams``: a REST API's stage says so (infra/ams_stage.py), the front
door's shim sets it for events from the AMS HTTP API (chalicelib/api/front_door.py, by API id), and the local
HTTPS endpoint of ``make run`` sets it on every request it serves (chalicelib/local/ams_server.py). Any other
value, or none, is Google's dialect.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

STAGE_VARIABLE = "dialect"


class Dialect(Enum):
    GOOGLE = "google"
    AMS = "ams"


def dialect_of(stage_vars: Mapping[str, str] | None) -> Dialect:
    """The dialect of the endpoint whose stage variables are ``stage_vars``."""
    return Dialect.AMS if (stage_vars or {}).get(STAGE_VARIABLE) == Dialect.AMS.value else Dialect.GOOGLE
