"""Wrongly typed fields that `make fuzz` found accepted once its requests reached real resources: each is
INVALID_ARGUMENT now, while what proto3 JSON allows (null for unset, int32 as a decimal string) still reads."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.api.account_requests import get_policy_request, set_policy_request
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.models import PushConfig, Subscription, parse_model

ROLE = "roles/pubsub.subscriber"


def test_get_iam_policy_options() -> None:
    good_bodies: list[Any] = [None, {}, {"options": None}, {"options": {}}, {"options": {"requestedPolicyVersion": 3}},
                              {"options": {"requestedPolicyVersion": "1"}},
                              {"options": {"requested_policy_version": None}}]
    for body in good_bodies:
        get_policy_request(body)
    bad_bodies: list[Any] = [{"options": {"requestedPolicyVersion": {}}}, {"options": {"requestedPolicyVersion": True}},
                             {"options": {"requestedPolicyVersion": "one"}}, {"options": []}, []]
    for bad in bad_bodies:
        with pytest.raises(InvalidArgument):
            get_policy_request(bad)


def test_set_iam_policy_bindings_and_version() -> None:
    request = set_policy_request({"policy": {"version": "1", "etag": None, "bindings": None}}, "subscriptions")
    assert request.names == () and request.etag == ""
    request = set_policy_request({"policy": {"bindings": [{"role": ROLE, "members": ["user:ann"]}]}},
                                 "subscriptions")
    assert request.names == ("ann",)
    bad_policies: list[dict[str, Any]] = [{"bindings": {}}, {"version": {}}, {"version": False}, {"etag": 5}]
    for policy in bad_policies:
        with pytest.raises(InvalidArgument):
            set_policy_request({"policy": policy}, "subscriptions")


def test_booleans_must_be_json_booleans() -> None:
    assert parse_model(PushConfig, {"noWrapper": {"writeMetadata": True}}, "push_config").no_wrapper is not None
    for model, body in ((PushConfig, {"noWrapper": {"writeMetadata": 0}}),
                        (Subscription, {"retainAckedMessages": "true"}),
                        (Subscription, {"enableExactlyOnceDelivery": 1})):
        with pytest.raises(InvalidArgument):
            parse_model(model, body, "x")
