"""The reusable component schemas of Metro's OpenAPI description (api/openapi.py names them by key).

Topics, subscriptions and push configurations come from their pydantic models (core/models.py), so the
description cannot drift from what Metro validates; the rest are written here in the wire shape that
core/responses.py, core/pulled.py and core/accounts.py render. Request bodies state what Metro accepts
(Google's camelCase names; Metro also takes snake_case, which the description leaves out).
"""

from __future__ import annotations

from typing import Any

from pydantic.json_schema import models_json_schema

from chalicelib.core import limits
from chalicelib.core.models import PushConfig, Subscription, Topic

REF = "#/components/schemas/{model}"
Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": REF.format(model=name)}


def _obj(properties: Schema, required: tuple[str, ...] = (), closed: bool = False) -> Schema:
    out: Schema = {"type": "object", "properties": properties}
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    return out


def _nullable(schema: Schema) -> Schema:
    """A request body whose fields may each be null: proto3 JSON reads null as the field's default."""
    props = {k: {"anyOf": [v, {"type": "null"}]} for k, v in schema["properties"].items()}
    return {**schema, "properties": props}


def _list(items: Schema, **bounds: int) -> Schema:
    return {"type": "array", "items": items, **bounds}


STRING: Schema = {"type": "string"}
STRINGS = _list(STRING)
STRING_MAP: Schema = {"type": "object", "additionalProperties": STRING}
EMAIL = r"^[^@\s]{1,64}@[^@\s]{1,255}$"  # as api/account_requests.py checks it ("" clears a user's email)
ACK_IDS = _list({"type": "string", "minLength": 1}, minItems=1)


def _model_schemas() -> dict[str, Schema]:
    """Topic, Subscription and PushConfig (with the models they nest) as pydantic states them."""
    models = [(Topic, "validation"), (Subscription, "validation"), (PushConfig, "validation")]
    _, schemas = models_json_schema(models, by_alias=True, ref_template=REF)  # type: ignore[arg-type]
    return dict(schemas["$defs"])


_ERROR = _obj({"error": _obj({
    "code": {"type": "integer", "description": "the HTTP status"},
    "message": STRING,
    "status": {"type": "string", "description": "google.rpc.Code name, e.g. INVALID_ARGUMENT"},
    "details": _list({"type": "object"}),
}, ("code", "message", "status"))}, ("error",))

_MESSAGE = _obj({"data": {"type": "string", "format": "byte"}, "attributes": STRING_MAP, "orderingKey": STRING,
                 "messageId": STRING, "publishTime": STRING})
_RECEIVED = _obj({"ackId": STRING, "message": ref("PubsubMessage"), "deliveryAttempt": {"type": "integer"}},
                 ("ackId", "message"))
_POLICY = _obj({"version": {"type": "integer"}, "etag": STRING,
                "bindings": _list(_obj({"role": STRING, "members": STRINGS, "condition": {"type": "object"}}))})
_PROJECT_ROLES = _obj({"project": STRING, "roles": STRINGS, "topics": STRINGS, "subscriptions": STRINGS})
_AMS_PROJECT = _obj({"name": STRING, "created_on": STRING, "modified_on": STRING, "created_by": STRING,
                     "description": STRING})
_AMS_USER = _obj({"uuid": STRING, "name": STRING, "projects": _list(ref("ProjectRoles")), "token": STRING,
                  "email": STRING, "service_roles": STRINGS, "first_name": STRING, "last_name": STRING,
                  "organization": STRING, "description": STRING, "created_on": STRING, "modified_on": STRING,
                  "created_by": STRING})

# Request bodies.
_REQUESTS: dict[str, Schema] = {
    "PublishRequest": _obj({"messages": _list(ref("PubsubMessage"), minItems=1)}, ("messages",)),
    "UpdateTopicRequest": _obj({"topic": ref("Topic"), "updateMask": STRING}, ("topic", "updateMask")),
    "UpdateSubscriptionRequest": _obj({"subscription": ref("Subscription"), "updateMask": STRING},
                                      ("subscription", "updateMask")),
    "PullRequest": _obj({"maxMessages": {"type": "integer", "minimum": 1, "maximum": limits.MAX_PULL_MESSAGES},
                         "returnImmediately": {"type": "boolean"}}, ("maxMessages",)),
    "AcknowledgeRequest": _obj({"ackIds": ACK_IDS}, ("ackIds",)),
    "ModifyAckDeadlineRequest": _obj({"ackIds": ACK_IDS, "ackDeadlineSeconds": {
        "type": "integer", "minimum": 0, "maximum": limits.MODIFY_DEADLINE_MAX}}, ("ackIds", "ackDeadlineSeconds")),
    "ModifyPushConfigRequest": _obj({"pushConfig": ref("PushConfig")}),
    "Empty": _obj({}),
    "AclRequest": _obj({"authorized_users": STRINGS}),
    "GetIamPolicyRequest": _obj({"options": _obj({"requestedPolicyVersion": {"type": "integer"}})}),
    "SetIamPolicyRequest": _obj({"policy": ref("Policy")}, ("policy",)),
    "TestIamPermissionsRequest": _obj({"permissions": STRINGS}),
    "ProjectRequest": _obj({"description": STRING}),
    "PushIdentitiesRequest": _obj({"service_accounts": _list({"type": "string", "pattern": EMAIL})}),
    "UserRequest": _obj({"projects": _list(_obj({"project": STRING, "roles": STRINGS})), "service_roles": STRINGS,
                         "email": {"type": "string", "pattern": f"^$|{EMAIL}"}, "first_name": STRING,
                         "last_name": STRING,
                         "organization": STRING, "description": STRING}),
    "MemberRolesRequest": _obj({"roles": STRINGS}),
}

# Responses.
_RESPONSES: dict[str, Schema] = {
    "Error": _ERROR,
    "PubsubMessage": _MESSAGE,
    "PublishResponse": _obj({"messageIds": STRINGS}, ("messageIds",)),
    "ReceivedMessage": _RECEIVED,
    "PullResponse": _obj({"receivedMessages": _list(ref("ReceivedMessage"))}),
    "ListTopicsResponse": _obj({"topics": _list(ref("Topic")), "nextPageToken": STRING}),
    "ListSubscriptionsResponse": _obj({"subscriptions": _list(ref("Subscription")), "nextPageToken": STRING}),
    "ListTopicSubscriptionsResponse": _obj({"subscriptions": STRINGS, "nextPageToken": STRING}),
    "Metrics": _obj({"metrics": _list({"type": "object"})}, ("metrics",)),
    "AuthorizedUsers": _obj({"authorized_users": STRINGS}, ("authorized_users",)),
    "Policy": _POLICY,
    "TestIamPermissionsResponse": _obj({"permissions": STRINGS}),
    "AmsProject": _AMS_PROJECT,
    "AmsProjects": _obj({"projects": _list(ref("AmsProject"))}, ("projects",)),
    "ProjectRoles": _PROJECT_ROLES,
    "AmsUser": _AMS_USER,
    "AmsUsers": _obj({"users": _list(ref("AmsUser")), "nextPageToken": STRING, "totalSize": {"type": "integer"}},
                     ("users",)),
    "PushIdentities": _obj({"service_accounts": STRINGS}, ("service_accounts",)),
    "Jwks": _obj({"keys": _list({"type": "object"})}, ("keys",)),
    "OpenApi": _obj({"openapi": STRING, "paths": {"type": "object"}}, ("openapi", "paths")),
}


def components() -> dict[str, Schema]:
    requests = {name: _nullable(schema) for name, schema in _REQUESTS.items()}
    return {**_model_schemas(), **requests, **_RESPONSES}
