"""Authentication and authorization at the edge: the token a request carries, and the check of the route's
rule (api/permissions.py) before its handler runs.

A token is accepted as the ``x-api-key`` header (AMS, argo-ams-library, curl), the ``key`` query parameter
(AMS, the discovery client's ``developerKey``), ``x-goog-api-key``, or ``Authorization: Bearer <token>``
(google-cloud-pubsub with ``google.oauth2.credentials.Credentials(token)``, gcloud's access token override).
"""

from __future__ import annotations

from collections.abc import Mapping

from chalicelib.api.permissions import IN_PROJECT, SERVICE, Rule
from chalicelib.core import names
from chalicelib.core.access.identity import Principal
from chalicelib.core.errors import InvalidArgument, PermissionDenied
from chalicelib.core.names import Name
from chalicelib.runtime import services

_BEARER = "bearer "


def credentials(headers: Mapping[str, str], params: Mapping[str, str]) -> str:
    """The token a request presents ('' for none)."""
    for header in ("x-api-key", "x-goog-api-key"):
        if headers.get(header):
            return headers[header].strip()
    authorization = headers.get("authorization", "")
    if authorization[:len(_BEARER)].lower() == _BEARER:
        return authorization[len(_BEARER):].strip()
    return params.get("key", "")


def authorize(principal: Principal, rule: Rule | None, project: str, resource_id: str) -> None:
    """PERMISSION_DENIED unless the route's rule allows ``principal``; a route without a rule is refused."""
    if rule is None:
        raise PermissionDenied("The caller does not have permission")
    scope = "" if rule.applies_to == SERVICE else project
    services().access.authorize(principal, rule.action, scope, _resource(rule, project, resource_id))


def _resource(rule: Rule, project: str, resource_id: str) -> Name | None:
    """The topic or subscription an ACL decision looks at (an invalid name has no ACL: nothing is granted)."""
    if rule.applies_to in (SERVICE, IN_PROJECT):
        return None
    try:
        return names.make(project, rule.applies_to, resource_id)
    except InvalidArgument:
        return None
