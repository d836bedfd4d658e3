"""Resources declared at start (METRO_INIT, PUBSUB_PROJECT1..N; docs/init.md) as typed values: each entry is
the typed request the REST API would have parsed from the same body, and says where it was declared."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from chalicelib.core.errors import MetroError
from chalicelib.core.names import Name
from chalicelib.core.schemas.model import SchemaSpec
from chalicelib.core.wire.models import Subscription, Topic
from chalicelib.core.wire.requests import AclRequest, ProjectRequest, UserRequest


@dataclass(frozen=True)
class At:
    """Where an entry was declared: the file (or variable) and the entry's path in it, e.g. ``topics[2]``."""

    source: str
    entry: str

    def __str__(self) -> str:
        return f"{self.source}: {self.entry}"

    def error(self, exc: MetroError) -> MetroError:
        """The same error (same status), its message prefixed with this place."""
        placed = copy.copy(exc)
        placed.message = f"{self}: {exc.message}"
        placed.args = (placed.message,)
        return placed


@dataclass(frozen=True)
class DeclaredProject:
    at: At
    name: str
    request: ProjectRequest


@dataclass(frozen=True)
class DeclaredUser:
    at: At
    name: str
    request: UserRequest
    token: str = ""  # "": one is generated when the user is created, and shown once


@dataclass(frozen=True)
class DeclaredSchema:
    at: At
    name: Name
    revisions: tuple[SchemaSpec, ...]  # the first creates the schema, each later one is committed after it


@dataclass(frozen=True)
class DeclaredTopic:
    at: At
    name: Name
    topic: Topic


@dataclass(frozen=True)
class DeclaredSubscription:
    at: At
    name: Name
    subscription: Subscription


@dataclass(frozen=True)
class DeclaredAcl:
    at: At
    name: Name  # a topic or a subscription
    request: AclRequest


@dataclass(frozen=True)
class Declaration:
    projects: tuple[DeclaredProject, ...] = ()
    users: tuple[DeclaredUser, ...] = ()
    schemas: tuple[DeclaredSchema, ...] = ()
    topics: tuple[DeclaredTopic, ...] = ()
    subscriptions: tuple[DeclaredSubscription, ...] = ()
    acls: tuple[DeclaredAcl, ...] = ()

    def __add__(self, other: Declaration) -> Declaration:
        return Declaration(self.projects + other.projects, self.users + other.users, self.schemas + other.schemas,
                           self.topics + other.topics, self.subscriptions + other.subscriptions,
                           self.acls + other.acls)


@dataclass
class Applied:
    """What applying a declaration did: one line per entry, the tokens generated for new users (shown once, by
    the caller, never logged), and the differences the API cannot update (left as they are)."""

    lines: list[str] = field(default_factory=list)
    tokens: list[tuple[str, str]] = field(default_factory=list)  # (user, token)
    reported: list[str] = field(default_factory=list)

    def done(self, at: At, what: str) -> None:
        self.lines.append(f"{at}: {what}")

    def report(self, at: At, what: str) -> None:
        self.reported.append(f"{at}: {what}")
