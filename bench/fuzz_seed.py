"""The resources `make fuzz` runs against, and how generated requests are steered onto them.

Names drawn from a path parameter's pattern almost never exist, so without help nearly every request to
`:seek`, `:offsets`, `:commit` or `:pull` ends in 404 and never reaches the code behind it. So:

- `seed` creates a project, topic, subscription (with messages), user, Avro schema and snapshot under the names
  the description gives as examples (chalicelib/api/openapi/description.py's PATH_PARAMETERS);
- `steered` lets a valid generated name be swapped for the seeded one (Hypothesis picks either), so every phase
  reaches real resources as well as missing ones; an invalid name is left alone, so negative requests stay
  negative;
- `restore` seeds again after a request that destroyed part of that state (a DELETE or a `:detach`
  answered 2xx), so an operation tested early does not starve the ones tested after it.
"""

from __future__ import annotations

import re
from typing import Any

import requests

from chalicelib.api.openapi.description import PATH_PARAMETERS
from chalicelib.api.openapi.schema_registry import AVRO_EXAMPLE

SEEDED = {name: schema["example"] for name, schema in PATH_PARAMETERS.items() if "example" in schema}
PROJECT, TOPIC, SUB, USER = SEEDED["project"], SEEDED["topic"], SEEDED["subscription"], SEEDED["user"]
SCHEMA, SNAPSHOT = SEEDED["schema"], SEEDED["snapshot"]


def seed(url: str, headers: dict[str, str]) -> None:
    """Create every seeded resource that does not exist (409s are fine); a new subscription gets a few messages."""
    def call(method: str, path: str, body: Any = None) -> bool:
        resp = requests.request(method, url + path, json=body, headers=headers, timeout=30)
        if resp.status_code >= 300 and resp.status_code != 409:
            raise RuntimeError(f"seeding {method} {path}: {resp.status_code} {resp.text[:200]}")
        return resp.status_code < 300

    call("POST", f"/v1/projects/{PROJECT}", {"description": "fuzzed"})
    call("PUT", f"/v1/projects/{PROJECT}/topics/{TOPIC}", {})
    if call("PUT", f"/v1/projects/{PROJECT}/subscriptions/{SUB}", {"topic": f"projects/{PROJECT}/topics/{TOPIC}"}):
        call("POST", f"/v1/projects/{PROJECT}/topics/{TOPIC}:publish",
             {"messages": [{"data": "aGVsbG8=", "attributes": {"n": str(i)}} for i in range(5)]})
    call("POST", f"/v1/users/{USER}", {"projects": [{"project": PROJECT, "roles": ["consumer"]}]})
    call("POST", f"/v1/projects/{PROJECT}/schemas?schemaId={SCHEMA}", {"type": "AVRO", "definition": AVRO_EXAMPLE})
    call("PUT", f"/v1/projects/{PROJECT}/snapshots/{SNAPSHOT}",
         {"subscription": f"projects/{PROJECT}/subscriptions/{SUB}"})


def steerable(name: str, value: Any, schema: dict[str, Any]) -> bool:
    """Whether `value` is a valid `name` parameter (so swapping in the seeded name keeps the request's kind)."""
    if name not in SEEDED or not isinstance(value, str):
        return False
    pattern, forbidden = schema.get("pattern"), schema.get("not", {}).get("pattern")
    return bool((pattern is None or re.search(pattern, value)) and not (forbidden and re.search(forbidden, value)))


def steered(parameters: dict[str, Any], schemas: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The generated parameters, and (when all are valid) the same with every seeded name swapped in."""
    if not parameters or not all(steerable(k, v, schemas.get(k, {})) for k, v in parameters.items()):
        return [parameters]
    return [parameters, {k: SEEDED[k] for k in parameters}]


def destroys_seeded_state(method: str, path: str, status_code: int) -> bool:
    return 200 <= status_code < 300 and (method == "DELETE" or path.endswith(":detach"))


def restore(url: str, headers: dict[str, str]) -> None:
    """Seed again; a subscription cut from the seeded topic (detached, or its topic deleted) is deleted first,
    since it cannot be attached again."""
    sub = f"{url}/v1/projects/{PROJECT}/subscriptions/{SUB}"
    current = requests.get(sub, headers=headers, timeout=30).json()
    if "name" in current and (current.get("detached") or current.get("topic") != f"projects/{PROJECT}/topics/{TOPIC}"):
        requests.delete(sub, headers=headers, timeout=30)
    seed(url, headers)
