"""Parsing what is declared at start (api/declared.py; docs/init.md): PUBSUB_PROJECT1..N's convention, the
variables as chalicelib/config.py reads them, and a document's entries parsed by the API's own parsers."""

from __future__ import annotations

import pytest

from chalicelib.api import declared
from chalicelib.config import LocalConfig
from chalicelib.core.errors import InvalidArgument


def test_pubsub_project_value_is_topics_and_their_pull_subscriptions() -> None:
    assert declared.pubsub_project("proj, orders:billing:audit ,events,") == {
        "topics": [{"name": "projects/proj/topics/orders"}, {"name": "projects/proj/topics/events"}],
        "subscriptions": [
            {"name": "projects/proj/subscriptions/billing", "topic": "projects/proj/topics/orders"},
            {"name": "projects/proj/subscriptions/audit", "topic": "projects/proj/topics/orders"}],
    }
    assert declared.pubsub_project("proj") == {"topics": [], "subscriptions": []}


def test_pubsub_project_variables_become_entries_named_after_the_variable() -> None:
    d = declared.from_variables([("PUBSUB_PROJECT1", "proj,orders:billing"), ("PUBSUB_PROJECT2", "other,topic")])
    assert [(t.at.source, t.at.entry, t.name.path) for t in d.topics] == [
        ("PUBSUB_PROJECT1", "topics[0]", "projects/proj/topics/orders"),
        ("PUBSUB_PROJECT2", "topics[0]", "projects/other/topics/topic")]
    assert [(s.name.path, s.subscription.topic, s.subscription.push_config) for s in d.subscriptions] == [
        ("projects/proj/subscriptions/billing", "projects/proj/topics/orders", None)]
    with pytest.raises(InvalidArgument, match=r"^PUBSUB_PROJECT1: subscriptions\[0\]: Invalid \[subscriptions\]"):
        declared.from_variables([("PUBSUB_PROJECT1", "proj,orders:b")])
    with pytest.raises(InvalidArgument, match=r"^PUBSUB_PROJECT1: topics\[0\]: Invalid project"):
        declared.from_variables([("PUBSUB_PROJECT1", ",orders")])


def test_config_reads_the_numbered_variables_up_to_the_first_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for n, value in ((1, "a,t1"), (2, ""), (3, "c,t3"), (5, "e,t5")):
        monkeypatch.setenv(f"PUBSUB_PROJECT{n}", value)
    monkeypatch.setenv("METRO_INIT", " metro-init.yaml ")
    local = LocalConfig()
    assert local.pubsub_projects == (("PUBSUB_PROJECT1", "a,t1"), ("PUBSUB_PROJECT3", "c,t3"))
    assert local.init_file == "metro-init.yaml"


def test_entries_are_parsed_into_the_api_s_typed_requests() -> None:
    d = declared.parse({
        "projects": [{"name": "demo"}],
        "users": [{"name": "ops", "projects": [{"project": "demo", "roles": ["publisher"]}]}],
        "topics": [{"name": "projects/demo/topics/orders", "labels": {"a": "b"}}],
        "subscriptions": [{"name": "projects/demo/subscriptions/billing", "topic": "projects/demo/topics/orders",
                           "ackDeadlineSeconds": 20}],
        "acls": [{"name": "projects/demo/subscriptions/billing", "authorized_users": ["ops"]}],
    }, "f.yaml")
    assert d.topics[0].topic.labels == {"a": "b"} and d.subscriptions[0].subscription.ack_deadline_seconds == 20
    assert d.users[0].request.projects is not None and d.users[0].request.projects[0].roles == ("publisher",)
    assert d.acls[0].name.collection == "subscriptions" and d.acls[0].request.names == ("ops",)
    assert declared.parse(None, "empty.yaml") == declared.Declaration()
    with pytest.raises(InvalidArgument, match=r"^f.yaml: users\[0\]: .*Unknown name \"roles\""):
        declared.parse({"users": [{"name": "ops", "roles": ["publisher"]}]}, "f.yaml")
    with pytest.raises(InvalidArgument, match=r"^f.yaml: subscriptions\[0\]: Invalid value at 'name'"):
        declared.parse({"subscriptions": [{"topic": "projects/demo/topics/orders"}]}, "f.yaml")
    with pytest.raises(InvalidArgument, match=r"^f.yaml: subscriptions\[0\]: .*amsPush"):
        declared.parse({"subscriptions": [{"name": "projects/demo/subscriptions/billing", "amsPush": {}}]}, "f.yaml")


def test_the_declaration_files_of_the_pages_parse() -> None:
    """Each file a page's example starts its stack with (``<!-- run: init FILE -->``) is a declaration."""
    import yaml

    from tests import doc_blocks

    used = {(page, b.init) for page in doc_blocks.pages() for b in doc_blocks.blocks(page) if b.init}
    assert used, "docs/init.md runs its example against a stack started with its file"
    for page, name in used:
        declaration = declared.parse(yaml.safe_load(doc_blocks.named_block(page, name).code), name)
        assert declaration.topics and declaration.subscriptions and declaration.users and declaration.acls
