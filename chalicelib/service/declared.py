"""Resources declared at start (METRO_INIT, PUBSUB_PROJECT1..N; docs/init.md): the whole declaration is checked
first (every reference between entries, and against what exists), then each entry is created, or brought in line
where the API can update it, through the same use cases the API's methods call. Applying it again changes nothing.

A difference the API cannot update (a subscription's topic or filter, a schema's type, a detached subscription) is
reported and left as it is: deleting and re-creating would lose messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from chalicelib.core import names
from chalicelib.core.access import quotas
from chalicelib.core.access.accounts import User
from chalicelib.core.access.identity import MAX_TOKEN_CHARS, SERVICE_ROLES, Principal
from chalicelib.core.errors import InvalidArgument, MetroError, NotFound
from chalicelib.core.names import DELETED_TOPIC, Name
from chalicelib.core.schemas.model import parse_encoding
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
from chalicelib.core.wire.models import Subscription, Topic
from chalicelib.core.wire.requests import UpdateSubscriptionRequest, UpdateTopicRequest
from chalicelib.service import push_config
from chalicelib.service.access import ADMIN_NAME, AccessService
from chalicelib.service.accounts import AccountService
from chalicelib.service.admin import AdminService
from chalicelib.service.checks import check_subscription
from chalicelib.service.schemas import SchemaService

MIN_TOKEN_CHARS = 16
_USER_FIELDS = ("email", "first_name", "last_name", "organization", "description")
# The fields compared with what exists: every settable field (output-only ones and AMS's own aside).
_TOPIC_FIELDS = tuple(f for f in Topic.model_fields if f not in {"name", "state", "satisfies_pzs"})
_SUBSCRIPTION_FIELDS = tuple(f for f in Subscription.model_fields if f not in {
    "name", "topic", "state", "topic_message_retention_duration", "ams_push", "ams_offset_ms", "detached",
    "bigquery_config", "cloud_storage_config"})
_INIT = Principal(ADMIN_NAME, "", SERVICE_ROLES)  # who creates what is declared (AMS's created_by)



class _Entry(Protocol):
    @property
    def at(self) -> At: ...


E = TypeVar("E", bound=_Entry)


@contextmanager
def _at(at: At) -> Iterator[None]:
    """An error raised for an entry names the file and the entry, and keeps the API's status and message."""
    try:
        yield
    except MetroError as exc:
        raise at.error(exc) from None


def _unique(entries: tuple[E, ...], key: Callable[[E], str], kind: str) -> None:
    seen: dict[str, At] = {}
    for entry in entries:
        name = key(entry)
        if name in seen:
            raise entry.at.error(InvalidArgument(f"{kind} {name} is declared twice (also at {seen[name].entry})."))
        seen[name] = entry.at


def _differences(declared: Topic | Subscription, current: Topic | Subscription, fields: tuple[str, ...]) -> list[str]:
    return [f for f in fields if getattr(declared, f) != getattr(current, f)]


def _pull_as_none(spec: Subscription) -> Subscription:
    """A push config without an endpoint is a pull subscription, however it was spelled."""
    return spec if spec.is_push else spec.model_copy(update={"push_config": None})


class DeclaredResources:
    """Applies a Declaration with the services the API's methods use. ``topic_updatable`` and
    ``subscription_updatable`` are the fields the API's update masks accept (api/parsing.py)."""

    def __init__(self, admin: AdminService, accounts: AccountService, access: AccessService, schemas: SchemaService,
                 topic_updatable: frozenset[str], subscription_updatable: frozenset[str]) -> None:
        self.ctx = admin.ctx
        self.admin, self.accounts, self.access, self.schemas = admin, accounts, access, schemas
        self.topic_updatable, self.subscription_updatable = topic_updatable, subscription_updatable

    # -- checked as a whole, before anything is created ----------------------------------------------------------
    def check(self, d: Declaration) -> None:
        _unique(d.projects, lambda p: p.name, "Project")
        _unique(d.users, lambda u: u.name, "User")
        _unique(tuple(u for u in d.users if u.token), lambda u: u.token, "The token of user")
        _unique(d.schemas, lambda s: s.name.path, "Schema")
        _unique(d.topics, lambda t: t.name.path, "Topic")
        _unique(d.subscriptions, lambda s: s.name.path, "Subscription")
        _unique(d.acls, lambda a: a.name.path, "The ACL of")
        projects = {p.name for p in d.projects}
        for user in d.users:
            with _at(user.at):
                self._check_user(user, projects)
        schemas = {s.name.path for s in d.schemas}
        for schema in d.schemas:
            self._check_schema(schema)
        topics = {t.name.path for t in d.topics}
        for topic in d.topics:
            with _at(topic.at):
                self._check_topic(topic, schemas)
        for sub in d.subscriptions:
            with _at(sub.at):
                self._check_subscription(sub, topics)
        users = {u.name: u for u in d.users}
        resources = topics | {s.name.path for s in d.subscriptions}
        for acl in d.acls:
            with _at(acl.at):
                self._check_acl(acl, resources, users)
        self._check_quotas(d)

    def _check_quotas(self, d: Declaration) -> None:
        """The per-project quotas (service/quotas.py) counted over what exists and what is declared new."""
        limits, resources = self.ctx.config.quotas, self.ctx.resources
        used: dict[tuple[str, str], int] = {}

        def take(at: At, kind: str, key: str, count: Callable[[str], int], limit: int) -> None:
            if (kind, key) not in used:
                used[kind, key] = count(key)
            with _at(at):
                quotas.check(kind, used[kind, key], limit)
            used[kind, key] += 1

        for t in d.topics:
            if resources.get_topic(t.name) is None:
                take(t.at, "topics-per-project", t.name.project, resources.count_topics, limits.topics)
        for s in d.subscriptions:
            if resources.get_subscription(s.name) is None:
                take(s.at, "subscriptions-per-project", s.name.project, resources.count_subscriptions,
                     limits.subscriptions)
                take(s.at, "subscriptions-per-topic", names.parse(s.subscription.topic, "topics").path,
                     resources.count_topic_subscriptions, limits.subscriptions_per_topic)

    def _check_user(self, user: DeclaredUser, projects: set[str]) -> None:
        if not self.access.open:  # open mode: a project exists as soon as it is used (service/accounts.py)
            for entry in user.request.projects or ():
                if entry.project not in projects and self.ctx.identity.get_project(entry.project) is None:
                    raise NotFound(f"Project {entry.project} doesn't exist")
        token = user.token
        if token and (not MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS or not token.isascii()
                      or not token.isprintable() or " " in token):
            raise InvalidArgument(f"Invalid token: {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} printable ASCII "
                                  "characters without spaces are expected.")
        if token and token == self.ctx.config.admin_key:
            raise InvalidArgument("Invalid token: it is the service admin's token (METRO_ADMIN_KEY).")
        holder = self.ctx.identity.user_for_token(self.access.hasher.hash(token)) if token else None
        if holder is not None and holder.name != user.name:
            raise InvalidArgument("Invalid token: another user holds it.")

    def _check_schema(self, schema: DeclaredSchema) -> None:
        first = schema.revisions[0]
        for i, spec in enumerate(schema.revisions):
            at = schema.at if i == 0 else At(schema.at.source, f"{schema.at.entry}.revisions[{i - 1}]")
            with _at(at):
                self.schemas.validate_schema(schema.name.project, spec)
                if spec.type is not first.type:
                    raise InvalidArgument(f"The schema's type is {first.type.value}; a revision cannot change it")

    def _check_topic(self, topic: DeclaredTopic, schemas: set[str]) -> None:
        settings = topic.topic.schema_settings
        if settings is None or not settings.schema_:
            return
        schema = names.parse(settings.schema_, "schemas")
        if schema.path not in schemas or self.ctx.schemas.get(schema) is not None:
            self.admin.schemas.checked(settings)
            return
        parse_encoding(settings.encoding)  # a schema the file creates: its revision ids are not known yet
        if settings.first_revision_id or settings.last_revision_id:
            raise InvalidArgument(f"Invalid value at 'schema_settings': {schema.path} is created by this declaration, "
                                  "so its revision ids are not known yet.")

    def _require_topic(self, name: str, topics: set[str], what: str) -> Name:
        topic = names.parse(name, "topics")
        if topic.path not in topics and self.ctx.resources.get_topic(topic) is None:
            raise NotFound(f"{what} {topic.path} does not exist (it is neither declared nor created).")
        return topic

    def _check_subscription(self, sub: DeclaredSubscription, topics: set[str]) -> None:
        spec = sub.subscription
        topic = self._require_topic(spec.topic, topics, "Topic")
        dead_letter = spec.dead_letter_policy
        if dead_letter and dead_letter.dead_letter_topic:
            dlt = self._require_topic(dead_letter.dead_letter_topic, topics, "Dead letter topic")
            if dlt.path == topic.path:
                raise InvalidArgument("The dead-letter topic must differ from the subscription's topic.")
            dead_letter = None  # checked here: it may not exist yet
        checked = spec.model_copy(update={"name": sub.name.path, "topic": topic.path,
                                          "dead_letter_policy": dead_letter})
        check_subscription(checked, self.ctx)
        push_config.validate(self.ctx, checked)

    def _check_acl(self, acl: DeclaredAcl, resources: set[str], users: dict[str, DeclaredUser]) -> None:
        if acl.name.path not in resources and self.ctx.resources.acl(acl.name) is None:
            raise NotFound(f"{acl.name.collection[:-1].capitalize()} {acl.name.path} doesn't exist")
        missing = []
        for name in acl.request.names:
            declared = users.get(name)
            if declared is not None:
                roles = next((p.roles for p in declared.request.projects or () if p.project == acl.name.project), ())
            else:
                found = self.ctx.identity.get_user(name)
                roles = found[0].roles_in(acl.name.project) if found is not None else ()
            if not roles:
                missing.append(name)
        if missing:  # AMS's :modifyAcl answer (service/access.py)
            raise NotFound(f"User(s): {','.join(missing)} do not exist")

    # -- applied, entry by entry ----------------------------------------------------------------------------------
    def apply(self, d: Declaration) -> Applied:
        self.check(d)
        out = Applied()
        steps: tuple[tuple[tuple[Any, ...], Callable[[Any, Applied], str]], ...] = (
            (d.projects, self._project), (d.users, self._user), (d.schemas, self._schema), (d.topics, self._topic),
            (d.subscriptions, self._subscription), (d.acls, self._acl))
        for entries, step in steps:
            for entry in entries:
                with _at(entry.at):
                    out.done(entry.at, step(entry, out))
        return out

    def _project(self, p: DeclaredProject, out: Applied) -> str:
        existing = self.ctx.identity.get_project(p.name)
        if existing is None:
            self.accounts.create_project(p.name, p.request, _INIT)
            return f"created project {p.name}"
        if p.request.description is not None and p.request.description != existing.description:
            self.accounts.update_project(p.name, p.request)
            return f"updated project {p.name} (description)"
        return f"project {p.name} unchanged"

    def _user(self, u: DeclaredUser, out: Applied) -> str:
        found = self.ctx.identity.get_user(u.name)
        if found is None:
            view = self.accounts.create_user(u.name, u.request, _INIT, token=u.token)
            if not u.token:
                out.tokens.append((u.name, view.token))
            return f"created user {u.name}"
        user, token_hash = found
        changed = _user_changes(u, user)
        if changed:
            self.accounts.update_user(u.name, u.request)
        if u.token and self.access.hasher.hash(u.token) != token_hash:
            self.accounts.refresh_token(u.name, u.token)
            changed.append("token")
        return f"updated user {u.name} ({', '.join(changed)})" if changed else f"user {u.name} unchanged"

    def _schema(self, s: DeclaredSchema, out: Applied) -> str:
        existing = self.ctx.schemas.revisions(s.name)  # newest first
        first, *later = s.revisions
        if not existing:
            self.schemas.create(s.name, first)
            for spec in later:
                self.schemas.commit(s.name, spec)
            return f"created schema {s.name.path} ({len(s.revisions)} revision(s))"
        if existing[0].type is not first.type:
            out.report(s.at, f"schema {s.name.path} is of type {existing[0].type.value}: a schema's type cannot "
                             "change (left as it is)")
            return f"schema {s.name.path} left as it is"
        if existing[0].spec == s.revisions[-1]:
            return f"schema {s.name.path} unchanged"
        known = [r.spec for r in existing]
        pending = [spec for spec in s.revisions if spec not in known]
        if s.revisions[-1] not in pending:  # the head must end as the last declared revision
            pending.append(s.revisions[-1])
        for spec in pending:
            self.schemas.commit(s.name, spec)
        return f"updated schema {s.name.path} ({len(pending)} revision(s) committed)"

    def _topic(self, t: DeclaredTopic, out: Applied) -> str:
        existing = self.ctx.resources.get_topic(t.name)
        if existing is None:
            self.admin.create_topic(t.name, t.topic)
            return f"created topic {t.name.path}"
        declared = t.topic.model_copy(update={"schema_settings": self.admin.schemas.checked(t.topic.schema_settings)})
        differ = _differences(declared, existing.spec, _TOPIC_FIELDS)
        mask = tuple(f for f in differ if f in self.topic_updatable)
        for field in differ:
            if field not in self.topic_updatable:
                out.report(t.at, f"topic {t.name.path}: {field} differs and cannot be updated (left as it is)")
        if not mask:
            return f"topic {t.name.path} unchanged"
        self.admin.patch_topic(t.name, UpdateTopicRequest(declared, mask))
        return f"updated topic {t.name.path} ({', '.join(mask)})"

    def _subscription(self, s: DeclaredSubscription, out: Applied) -> str:
        rec = self.ctx.resources.get_subscription(s.name)
        declared = s.subscription.model_copy(update={"topic": names.parse(s.subscription.topic, "topics").path})
        if rec is None:
            self.admin.create_subscription(s.name, declared)
            if declared.detached:
                self.admin.detach_subscription(s.name)
            return f"created subscription {s.name.path}" + (" (detached)" if declared.detached else "")
        current = rec.spec
        if current.topic != declared.topic:
            why = "its topic was deleted" if current.topic == DELETED_TOPIC else f"its topic is {current.topic}"
            out.report(s.at, f"subscription {s.name.path}: {why}, and a subscription's topic cannot change")
        differ = _differences(_pull_as_none(declared), _pull_as_none(current), _SUBSCRIPTION_FIELDS)
        mask = tuple(f for f in differ if f in self.subscription_updatable)
        for field in differ:
            if field not in self.subscription_updatable:
                out.report(s.at, f"subscription {s.name.path}: {field} differs and cannot be updated (left as it is)")
        if mask:
            self.admin.patch_subscription(s.name, UpdateSubscriptionRequest(_pull_as_none(declared), mask))
        if declared.detached and not current.detached:
            self.admin.detach_subscription(s.name)
            mask += ("detached",)
        elif current.detached and not declared.detached:
            out.report(s.at, f"subscription {s.name.path} is detached, and cannot be attached again")
        return f"updated subscription {s.name.path} ({', '.join(mask)})" if mask \
            else f"subscription {s.name.path} unchanged"

    def _acl(self, a: DeclaredAcl, out: Applied) -> str:
        current = set(self.access.authorized_users(a.name).names)
        if current == set(a.request.names):
            return f"ACL of {a.name.path} unchanged"
        self.access.modify_acl(a.name, a.request)
        return f"set the ACL of {a.name.path} ({', '.join(a.request.names) or 'nobody'})"


def _user_changes(declared: DeclaredUser, user: User) -> list[str]:
    """The fields of a declared user (those given) that differ from the stored user's."""
    request = declared.request
    changed = [k for k in _USER_FIELDS if getattr(request, k) is not None and getattr(request, k) != getattr(user, k)]
    if request.projects is not None and {p.project: set(p.roles) for p in request.projects} != {
            p.project: set(p.roles) for p in user.projects if p.roles}:
        changed.append("projects")
    if request.service_roles is not None and set(request.service_roles) != set(user.service_roles):
        changed.append("service_roles")
    return changed
