"""Request bodies of the identity routes -> typed values (core/wire/requests.py): AMS's projects, users, members
and ``:modifyAcl`` bodies, Google's ``:setIamPolicy`` and ``:testIamPermissions`` bodies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chalicelib.core import names
from chalicelib.core.access.accounts import ACL_ROLE, MEMBER_PREFIX, ProjectRoles
from chalicelib.core.access.identity import PROJECT_ROLES, SERVICE_ROLES
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.fields import int_field
from chalicelib.core.wire.requests import (
    AclRequest,
    PageRequest,
    PermissionsQuery,
    ProjectRequest,
    PushIdentitiesRequest,
    RolesRequest,
    UserRequest,
)

_USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+\-]{0,99}\Z")
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,255}\Z")
MAX_TEXT = 1024
MAX_LIST = 1000
MAX_PAGE_SIZE_DIGITS = 9
_USER_TEXT = ("email", "first_name", "last_name", "organization", "description")

PROFILE = "profile"  # GET /v1/users/profile is the caller's own user: no user may take that name


def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    return body


def _text(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise InvalidArgument(f"Invalid value at '{key}': a string of at most {MAX_TEXT} characters is expected.")
    return value


def _strings(body: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_LIST or not all(
            isinstance(v, str) and 0 < len(v) <= MAX_TEXT for v in value):
        raise InvalidArgument(f"Invalid value at '{key}': a list of non-empty strings is expected.")
    return tuple(dict.fromkeys(value))


def user_name(raw: str) -> str:
    if not _USER_NAME.match(raw) or raw == PROFILE:
        raise InvalidArgument(f"Invalid user name: {raw[:100]!r}")
    return raw


def _roles(values: tuple[str, ...] | None, known: frozenset[str], key: str) -> tuple[str, ...] | None:
    unknown = sorted(set(values or ()) - known)
    if unknown:
        raise InvalidArgument(f"Invalid {key}: {unknown[0]!r} is not one of {', '.join(sorted(known))}.")
    return values


def _project_roles(body: Mapping[str, Any]) -> tuple[ProjectRoles, ...] | None:
    raw = body.get("projects")
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > MAX_LIST:
        raise InvalidArgument("Invalid value at 'projects': a list of {project, roles} objects is expected.")
    out: dict[str, ProjectRoles] = {}
    for entry in raw:
        fields = _object(entry)
        project = names.check_project(_text(fields, "project") or "")
        roles = _roles(_strings(fields, "roles"), PROJECT_ROLES, "role") or ()
        out[project] = ProjectRoles(project, tuple(sorted(roles)))
    return tuple(out.values())


def user_request(body: Any) -> UserRequest:
    """AMS's user body: projects with roles, service_roles, email and the descriptive fields."""
    fields = _object(body)
    texts = {key: _text(fields, key) for key in _USER_TEXT}
    email = texts["email"]
    if email and not _EMAIL.match(email):
        raise InvalidArgument(f"Invalid email: {email[:100]!r}")
    return UserRequest(projects=_project_roles(fields),
                       service_roles=_roles(_strings(fields, "service_roles"), SERVICE_ROLES, "service role"),
                       **texts)


def member_roles_request(body: Any, project: str) -> RolesRequest:
    """``members/{user}:add`` (``{"roles": [...]}``) or ``PUT``/``POST members/{user}`` (AMS's user body, whose
    entry for this project gives the roles)."""
    fields = _object(body)
    if "roles" in fields:
        return RolesRequest(_roles(_strings(fields, "roles"), PROJECT_ROLES, "role") or ())
    entries = user_request(fields).projects or ()  # the whole user body is checked, not only its projects
    return RolesRequest(next((e.roles for e in entries if e.project == project), ()))


def user_page_request(params: Mapping[str, str]) -> PageRequest:
    """AMS's user paging: ``pageSize`` 0 (the default) lists every user."""
    raw = params.get("pageSize", "0") or "0"
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_PAGE_SIZE_DIGITS:  # int() fails on "²"
        raise InvalidArgument(f"Invalid page_size: {raw[:20]!r}")
    return PageRequest(int(raw), params.get("pageToken", ""))


def project_request(body: Any) -> ProjectRequest:
    return ProjectRequest(_text(_object(body), "description"))


def acl_request(body: Any) -> AclRequest:
    """AMS's ``:modifyAcl``: ``{"authorized_users": [names]}``."""
    users = _strings(_object(body), "authorized_users")
    return AclRequest(tuple(user_name(u) for u in users or ()))


def _members(binding: Mapping[str, Any]) -> tuple[str, ...]:
    members = _strings(binding, "members") or ()
    bad = [m for m in members if not m.startswith(MEMBER_PREFIX)]
    if bad:
        raise InvalidArgument(f"Invalid member {bad[0][:100]!r}: Metro's members are written user:<name>.")
    return tuple(user_name(m[len(MEMBER_PREFIX):]) for m in members)


def set_policy_request(body: Any, collection: str) -> AclRequest:
    """Google's ``:setIamPolicy``: bindings of the collection's one role (``roles/pubsub.publisher`` on a
    topic, ``roles/pubsub.subscriber`` on a subscription) become the resource's ACL."""
    fields = _object(body)
    if fields.get("policy") is None:  # REQUIRED in Google's SetIamPolicyRequest: no body must not clear an ACL
        raise InvalidArgument("Invalid value at 'policy': a policy is required.")
    policy = _object(fields["policy"])
    int_field(policy, "version", "version")
    bindings = policy.get("bindings")
    if bindings is None:
        bindings = []
    if not isinstance(bindings, list):
        raise InvalidArgument("Invalid value at 'policy.bindings': a list is expected.")
    names_out: list[str] = []
    for binding in bindings:
        fields = _object(binding)
        if fields.get("role") != ACL_ROLE[collection]:
            raise InvalidArgument(f"Role {str(fields.get('role'))[:100]!r} is not supported on {collection}; "
                                  f"the only role is {ACL_ROLE[collection]}.")
        if fields.get("condition"):
            raise InvalidArgument("Conditional role bindings are not supported.")
        names_out.extend(_members(fields))
    etag = policy.get("etag")
    if etag is None:
        etag = ""
    if not isinstance(etag, str):
        raise InvalidArgument("Invalid value at 'policy.etag'.")
    return AclRequest(tuple(dict.fromkeys(names_out)), etag)


def get_policy_request(body: Any) -> None:
    """``:getIamPolicy``'s optional ``{"options": {"requestedPolicyVersion": n}}``: checked, then ignored (every
    version reads the same: Metro's policies have no conditions)."""
    if body is None:
        return
    options = _object(body).get("options")
    if options is not None:
        options = _object(options)
        int_field(options, "requestedPolicyVersion", "requested_policy_version")


def permissions_request(body: Any) -> PermissionsQuery:
    return PermissionsQuery(_strings(_object(body), "permissions") or ())


def push_identities_request(body: Any) -> PushIdentitiesRequest:
    accounts = _strings(_object(body), "service_accounts") or ()
    bad = [a for a in accounts if not _EMAIL.match(a)]
    if bad:
        raise InvalidArgument(f"Invalid service account {bad[0][:100]!r}: an email address is expected.")
    return PushIdentitiesRequest(tuple(a.lower() for a in accounts))
