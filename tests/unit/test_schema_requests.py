"""The bodies of the schema methods parsed into typed values (api/schema_requests.py)."""

from __future__ import annotations

import pytest

from chalicelib.api.schema_requests import rollback_request, wrapped_schema
from chalicelib.core.errors import InvalidArgument

AVRO = '{"type": "record", "name": "R", "fields": [{"name": "n", "type": "string"}]}'


def test_commit_reads_the_schema_and_ignores_a_name_or_parent_string() -> None:
    for extra in ({}, {"name": "projects/p/schemas/s"}, {"parent": "projects/p"}, {"name": None}):
        spec = wrapped_schema({"schema": {"type": "AVRO", "definition": AVRO}, **extra})
        assert spec.definition == AVRO


def test_commit_refuses_a_name_or_parent_that_is_not_a_string() -> None:
    extras: list[dict[str, object]] = [{"name": {}}, {"name": 3}, {"parent": ["projects/p"]}]  # the first: make fuzz
    for extra in extras:
        with pytest.raises(InvalidArgument, match="TYPE_STRING"):
            wrapped_schema({"schema": {"type": "AVRO", "definition": AVRO}, **extra})


def test_rollback_reads_null_as_unset() -> None:
    assert rollback_request({"revisionId": "abc"}) == "abc"
    with pytest.raises(InvalidArgument, match="revision_id is required"):
        rollback_request({"revisionId": None})


def test_output_only_fields_are_ignored_but_must_have_their_type() -> None:
    schema = {"type": "AVRO", "definition": AVRO, "name": "projects/p/schemas/s", "revisionId": "r1",
              "revisionCreateTime": "2026-01-01T00:00:00Z"}
    assert wrapped_schema({"schema": schema}).definition == AVRO
    bads: list[dict[str, object]] = [{"revisionCreateTime": {}}, {"revisionCreateTime": "yesterday"},
                                     {"revisionId": 7}, {"name": []}]  # the first: found by make fuzz, was accepted
    for bad in bads:
        with pytest.raises(InvalidArgument):
            wrapped_schema({"schema": {**schema, **bad}})
