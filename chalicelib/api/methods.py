"""One API method, declared once: where it is served (route template, HTTP method, verb), the function that
serves it, who may call it, and how the OpenAPI description shows it.

Each handler module ends with the ``METHODS`` it serves; api/registry.py gathers them and derives every table
from them: the Chalice routes (app.py registers each route template once), the (method, verb) -> handler
tables that api/routes.py dispatches on, the permission table, and the OpenAPI description (api/openapi/description.py).
Adding a method is one ``Method(...)`` next to its handler, a typed request, a service call and tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.api.permissions import Rule
from chalicelib.core.access.identity import Action


@dataclass(frozen=True)
class Method:
    route: str  # a route template of api/permissions.py
    http: str  # the HTTP method
    verb: str  # the word after the colon, "" for none
    handler: Any  # (target, Incoming) -> Result; a public route's: (Request) -> Response
    rule: Rule  # who may call it (api/permissions.py)
    summary: str  # one line for the description
    answer: str = "Empty"  # component schema of the 200 answer
    body: str | None = None  # component schema of the JSON request body
    query: tuple[str, ...] = ()  # the description's query parameters (api/openapi/description.py's QUERY)
    required: tuple[str, ...] = ()  # the query parameters among ``query`` a request must carry
    tag: str = "AMS"
    path: str = ""  # only where the URL is not the route followed by ":verb" (GET /v1/users/profile)
    content: str = "application/json"  # media type of the 200 answer

    @property
    def url(self) -> str:
        return self.path or (f"{self.route}:{self.verb}" if self.verb else self.route)

    @property
    def public(self) -> bool:
        return self.rule.action is Action.PUBLIC

    @property
    def key(self) -> tuple[str, str]:
        return self.http, self.verb
