"""Which project owns a push identity: the service account a Metro-signed push token asserts.

A webhook that checks a push token's ``email`` trusts Metro to assert that identity only for its owner, so in
keys mode a project may register, and its subscriptions may name, only service accounts it owns:
- Google's form of a service account of that very project, ``{name}@{project}.iam.gserviceaccount.com``;
- or one the operator assigned to it: a ``{project}={email}`` entry of METRO_PUSH_SERVICE_ACCOUNTS.
A plain ``{email}`` entry (no project) names an account any project may use, and counts only in open mode,
where there are no tenants to keep apart.
"""

from __future__ import annotations

from collections.abc import Iterable

GOOGLE_SERVICE_ACCOUNT_DOMAIN = ".iam.gserviceaccount.com"


def normalized(email: str) -> str:
    return email.strip().lower()


def in_project_namespace(project: str, email: str) -> bool:
    """``{name}@{project}.iam.gserviceaccount.com``, with a non-empty name."""
    local, _, domain = normalized(email).partition("@")
    return bool(local) and domain == f"{project.lower()}{GOOGLE_SERVICE_ACCOUNT_DOMAIN}"


def owned_by(project: str, email: str, listed: Iterable[str]) -> bool:
    """Whether ``project`` owns ``email``: its own namespace, or assigned to it by the operator."""
    return in_project_namespace(project, email) or f"{project}={normalized(email)}" in set(listed)


def listed_for(project: str, email: str, listed: Iterable[str]) -> bool:
    """Open mode: a plain entry (any project) or one assigned to ``project``."""
    names = set(listed)
    return normalized(email) in names or f"{project}={normalized(email)}" in names
