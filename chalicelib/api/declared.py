"""Resources declared at start (docs/init.md): a YAML or JSON file (METRO_INIT) or the emulator wrappers'
PUBSUB_PROJECT1..N variables -> typed values (core/wire/declared.py). Each entry is parsed by the API's own request
parsers (api/parsing.py, account_requests.py, schema_requests.py), so an entry the API would refuse is refused with
the API's message, prefixed with the file and the entry (``metro-init.yaml: topics[2]: ...``).

``apply(file, services)`` reads, checks and applies a file (service/declared.py); the local stack calls
``apply_declaration`` at each start (chalicelib/local/declare.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml

from chalicelib.api import account_requests, parsing, schema_requests
from chalicelib.core import names
from chalicelib.core.errors import InvalidArgument, MetroError
from chalicelib.core.names import Name
from chalicelib.core.wire.declared import (
    Applied,
    At,
    Declaration,
    DeclaredAcl,
    DeclaredProject,
    DeclaredSchema,
    DeclaredSubscription,
    DeclaredTopic,
    DeclaredUser,
)
from chalicelib.runtime import Services
from chalicelib.service.declared import DeclaredResources

SECTIONS = ("projects", "users", "schemas", "topics", "subscriptions", "acls")
_USER_FIELDS = {"name", "token", "projects", "service_roles", "email", "first_name", "last_name", "organization",
                "description"}
T = TypeVar("T")


class _Placed(Exception):
    """An entry's error that names a place inside the entry already (a schema's revision)."""

    def __init__(self, error: MetroError) -> None:
        super().__init__(error.message)
        self.error = error


# -- entries -------------------------------------------------------------------------------------------------------
def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the entry must be a JSON object")
    return dict(body)


def _name(fields: dict[str, Any], collection: str) -> Name:
    raw = fields.get("name")
    if not isinstance(raw, str) or not raw:
        raise InvalidArgument(f"Invalid value at 'name': the full name (projects/{{project}}/{collection}/{{id}}) "
                              "is required.")
    return names.parse(raw, collection)


def _string(fields: dict[str, Any], key: str) -> str:
    raw = fields.pop(key, None)
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise InvalidArgument(f"Invalid value at '{key}' (TYPE_STRING)")
    return raw


def project_entry(at: At, body: Any) -> DeclaredProject:
    """AMS's project body, with its name: ``{"name": "demo", "description": "..."}``."""
    fields = _object(body)
    parsing._only_fields(fields, {"name", "description"})
    name = names.check_project(_string(fields, "name"))
    return DeclaredProject(at, name, account_requests.project_request(fields))


def user_entry(at: At, body: Any) -> DeclaredUser:
    """AMS's user body, with its name and, optionally, its token (else one is generated and shown once)."""
    fields = _object(body)
    parsing._only_fields(fields, _USER_FIELDS)
    name = account_requests.user_name(_string(fields, "name"))
    token = _string(fields, "token")
    return DeclaredUser(at, name, account_requests.user_request(fields), token)


def schema_entry(at: At, body: Any) -> DeclaredSchema:
    """Google's Schema (``name``, ``type``, ``definition``), and ``revisions``: later Schema bodies, committed in
    order after the first."""
    fields = _object(body)
    later = fields.pop("revisions", None) or []
    if not isinstance(later, list):
        raise InvalidArgument("Invalid value at 'revisions': a list of schemas is expected.")
    name = _name(fields, "schemas")
    specs = [schema_requests.schema_spec(fields)]
    for i, revision in enumerate(later):
        try:
            specs.append(schema_requests.schema_spec(revision))
        except MetroError as exc:
            raise _Placed(At(at.source, f"{at.entry}.revisions[{i}]").error(exc)) from None
    return DeclaredSchema(at, name, tuple(specs))


def topic_entry(at: At, body: Any) -> DeclaredTopic:
    """Google's Topic, as ``PUT .../topics/{t}`` takes it, with its full ``name``."""
    fields = _object(body)
    name = _name(fields, "topics")
    return DeclaredTopic(at, name, parsing.topic_request(fields, name))


def subscription_entry(at: At, body: Any) -> DeclaredSubscription:
    """Google's Subscription, as ``PUT .../subscriptions/{s}`` takes it, with its full ``name``."""
    fields = _object(body)
    name = _name(fields, "subscriptions")
    return DeclaredSubscription(at, name, parsing.subscription_request(fields, name))


def acl_entry(at: At, body: Any) -> DeclaredAcl:
    """AMS's ``:modifyAcl`` body with the topic's or subscription's full name:
    ``{"name": "projects/demo/topics/orders", "authorized_users": ["ops"]}``."""
    fields = _object(body)
    parsing._only_fields(fields, {"name", "authorized_users"})
    name = _name(fields, "subscriptions" if "/subscriptions/" in str(fields.get("name")) else "topics")
    del fields["name"]
    return DeclaredAcl(at, name, account_requests.acl_request(fields))


_ENTRIES: dict[str, Callable[[At, Any], Any]] = {
    "projects": project_entry, "users": user_entry, "schemas": schema_entry, "topics": topic_entry,
    "subscriptions": subscription_entry, "acls": acl_entry}


# -- documents -----------------------------------------------------------------------------------------------------
def _section(document: dict[str, Any], section: str, source: str) -> Iterator[Any]:
    raw = document.get(section)
    if raw is None:
        return
    if not isinstance(raw, list):
        raise InvalidArgument(f"{source}: {section}: a list is expected.")
    for i, body in enumerate(raw):
        at = At(source, f"{section}[{i}]")
        try:
            yield _ENTRIES[section](at, body)
        except _Placed as placed:
            raise placed.error from None
        except MetroError as exc:
            raise at.error(exc) from None


def parse(document: Any, source: str) -> Declaration:
    """A whole document (the file's parsed YAML or JSON) -> its typed entries; the first bad entry is refused."""
    if document is None:  # an empty file declares nothing
        return Declaration()
    if not isinstance(document, dict):
        raise InvalidArgument(f"{source}: the document must be an object with the sections {', '.join(SECTIONS)}.")
    unknown = sorted(set(document) - set(SECTIONS), key=str)
    if unknown:
        raise InvalidArgument(f'{source}: Unknown name "{unknown[0]}": the sections are {", ".join(SECTIONS)}.')
    parts = {section: tuple(_section(document, section, source)) for section in SECTIONS}
    return Declaration(**parts)


def load(file: str | Path) -> Any:
    """The file's document: YAML, or JSON (which YAML reads as it is)."""
    path = Path(file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"{file}: cannot be read ({exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidArgument(f"{file}: neither YAML nor JSON: {exc}") from None


def read(file: str | Path) -> Declaration:
    return parse(load(file), str(file))


# -- PUBSUB_PROJECT1..N --------------------------------------------------------------------------------------------
def pubsub_project(value: str) -> dict[str, Any]:
    """The emulator wrappers' convention, ``project,topicA:subA1:subA2,topicB``: the project's topics and, after
    each topic's colons, its pull subscriptions -> the same document a file would hold."""
    project, *items = (part.strip() for part in value.split(","))
    topics: list[dict[str, Any]] = []
    subscriptions: list[dict[str, Any]] = []
    for item in filter(None, items):
        topic_id, *subscription_ids = (part.strip() for part in item.split(":"))
        topic = f"projects/{project}/topics/{topic_id}"
        topics.append({"name": topic})
        subscriptions += [{"name": f"projects/{project}/subscriptions/{s}", "topic": topic}
                          for s in subscription_ids if s]
    return {"topics": topics, "subscriptions": subscriptions}


def from_variables(variables: Iterable[tuple[str, str]]) -> Declaration:
    """(``PUBSUB_PROJECT1``, value), ... -> one declaration; an entry is named after its variable."""
    declaration = Declaration()
    for variable, value in variables:
        declaration += parse(pubsub_project(value), variable)
    return declaration


# -- applying ------------------------------------------------------------------------------------------------------
def resources(services: Services) -> DeclaredResources:
    return DeclaredResources(services.admin, services.accounts, services.access, services.schemas,
                             frozenset(parsing.TOPIC_UPDATABLE.values()),
                             frozenset(parsing.SUBSCRIPTION_UPDATABLE.values()))


def apply_declaration(declaration: Declaration, services: Services) -> Applied:
    """Check the whole declaration (nothing is created when an entry is refused), then apply it idempotently."""
    return resources(services).apply(declaration)


def apply(file: str | Path, services: Services) -> Applied:
    """Read a declaration file (METRO_INIT), check it whole, and apply it idempotently."""
    return apply_declaration(read(file), services)
