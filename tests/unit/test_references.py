"""Every request field that names a resource declares how it is authorized (core/access/references.py), and the
walker finds each declared name in a parsed request, nested models and update masks included."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import typing

import pytest
from pydantic import BaseModel

import chalicelib.core
from chalicelib.api import parsing, snapshot_requests
from chalicelib.api.schema_requests import validate_message_request
from chalicelib.core import names
from chalicelib.core.access.identity import Action
from chalicelib.core.access.references import Checked, Refers, markers, references

# A field whose name says it names a resource or an identity must carry Refers or Checked.
NAME_LIKE = re.compile(r"^(name|names|topic|subscription|snapshot|schema_?|dead_letter_topic|service_account_email|"
                       r"service_accounts|projects?|members?|users?|accounts?)$")


def _typed(cls: object) -> bool:
    return inspect.isclass(cls) and (issubclass(cls, BaseModel) or hasattr(cls, "__dataclass_fields__"))


def _core_classes() -> list[type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(chalicelib.core.__path__, "chalicelib.core."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, _typed):
            if cls.__module__ == module.__name__:
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


def _hints(cls: type) -> dict[str, object]:
    if issubclass(cls, BaseModel):
        return {f: info.annotation for f, info in cls.model_fields.items()}
    return dict(typing.get_type_hints(cls))


def _models_in(tp: object) -> list[type]:
    """The typed classes (Name aside: it is a value) a field's type holds, through Optional and tuples."""
    found: list[type] = [tp] if isinstance(tp, type) and _typed(tp) and tp is not names.Name else []
    return found + [c for arg in typing.get_args(tp) for c in _models_in(arg)]


def _field_classes(cls: type) -> list[type]:
    """The typed classes held by the fields the walker descends into (undeclared fields)."""
    declared = markers(cls)
    return [c for field, tp in _hints(cls).items() if not declared[field] for c in _models_in(tp)]


def request_classes() -> set[type]:
    """Every typed request (``*Request``, ``*Body``, ``*Query``; Topic and Subscription are create bodies) and
    every model reachable from one."""
    roots = [c for c in _core_classes() if re.search(r"(Request|Body|Query)$", c.__name__)]
    from chalicelib.core.wire.models import Subscription, Topic
    todo, seen = [*roots, Topic, Subscription], set()
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            todo.extend(_field_classes(cls))
    return seen


def test_requests_are_found() -> None:
    found = {c.__name__ for c in request_classes()}
    assert {"Subscription", "Topic", "DeadLetterPolicy", "SchemaSettings", "SeekRequest", "CreateSnapshotBody",
            "ValidateMessageRequest", "AclRequest", "PushIdentitiesRequest", "OidcToken"} <= found


def test_every_name_like_field_is_declared() -> None:
    undeclared = []
    for cls in request_classes():
        for field, metadata in markers(cls).items():
            declared = any(isinstance(m, (Refers, Checked)) for m in metadata)
            hint = _hints(cls)[field]
            container = bool(_models_in(hint))  # a nested request model: its own fields are checked
            if not declared and not container and (NAME_LIKE.match(field) or "Name" in str(hint)):
                undeclared.append(f"{cls.__module__}.{cls.__name__}.{field}")
    assert not undeclared, f"request fields naming a resource without Refers or Checked: {undeclared}"


def declared_references() -> set[tuple[str, str]]:
    """(class, field) of every Refers declaration: what the cross-project matrix must probe."""
    return {(cls.__name__, field) for cls in request_classes() for field, metadata in markers(cls).items()
            if any(isinstance(m, Refers) for m in metadata)}


def test_the_declarations() -> None:
    assert declared_references() == {
        ("Subscription", "topic"), ("DeadLetterPolicy", "dead_letter_topic"), ("SchemaSettings", "schema_"),
        ("ValidateMessageRequest", "schema"), ("SeekRequest", "snapshot"), ("CreateSnapshotBody", "subscription"),
        ("CreateSnapshotRequest", "subscription")}


def _found(request: object) -> list[tuple[str, str, Action]]:
    return [(r.field, r.name.path, r.rule.action) for r in references(request)]


def test_a_subscription_names_its_topic_and_dead_letter_topic() -> None:
    sub = parsing.subscription_request({"topic": "projects/b/topics/ttt", "deadLetterPolicy": {
        "deadLetterTopic": "projects/c/topics/dlt", "maxDeliveryAttempts": 5}}, names.parse(
        "projects/a/subscriptions/sss", "subscriptions"))
    assert _found(sub) == [("topic", "projects/b/topics/ttt", Action.PROJECT_ADMIN),
                           ("dead_letter_policy.dead_letter_topic", "projects/c/topics/dlt", Action.PUBLISH)]


def test_a_patch_names_only_what_its_mask_updates() -> None:
    name = names.parse("projects/a/subscriptions/sss", "subscriptions")
    body = {"subscription": {"topic": "projects/b/topics/ttt", "deadLetterPolicy": {
        "deadLetterTopic": "projects/c/topics/dlt"}}, "updateMask": "ackDeadlineSeconds"}
    assert _found(parsing.update_subscription_request(body, name)) == []
    body["updateMask"] = "deadLetterPolicy"
    assert _found(parsing.update_subscription_request(body, name)) == [
        ("subscription.dead_letter_policy.dead_letter_topic", "projects/c/topics/dlt", Action.PUBLISH)]
    topic = names.parse("projects/a/topics/ttt", "topics")
    patch = {"topic": {"schemaSettings": {"schema": "projects/b/schemas/sch"}}, "updateMask": "schemaSettings"}
    assert _found(parsing.update_topic_request(patch, topic)) == [
        ("topic.schema_settings.schema_", "projects/b/schemas/sch", Action.PROJECT_MEMBER)]


def test_seek_snapshot_and_validate_message_name_their_resources() -> None:
    sub = names.parse("projects/a/subscriptions/sss", "subscriptions")
    assert _found(snapshot_requests.seek_request({"snapshot": "projects/b/snapshots/snp"}, sub)) == [
        ("snapshot", "projects/b/snapshots/snp", Action.READ_SUBSCRIPTIONS)]
    assert _found(snapshot_requests.seek_request({"time": "2026-01-01T00:00:00Z"}, sub)) == []
    snap = names.parse("projects/a/snapshots/snp", "snapshots")
    assert _found(snapshot_requests.create_snapshot_request({"subscription": "projects/b/subscriptions/sss"},
                                                            snap)) == [
        ("subscription", "projects/b/subscriptions/sss", Action.CONSUME)]
    request = validate_message_request({"name": "projects/b/schemas/sch", "message": "e30=", "encoding": "JSON"})
    assert _found(request) == [("schema", "projects/b/schemas/sch", Action.PROJECT_MEMBER)]


def test_empty_and_deleted_topic_names_name_nothing() -> None:
    from chalicelib.core.wire.models import Subscription
    assert _found(Subscription()) == []
    assert _found(Subscription(topic=names.DELETED_TOPIC)) == []
    with pytest.raises(Exception, match="Invalid"):
        list(references(Subscription(topic="projects/b/nonsense")))
