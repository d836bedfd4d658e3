"""The reusable component schemas of Metro's OpenAPI description (api/openapi/description.py names them by key).

Topics, subscriptions and push configurations come from their pydantic models (core/wire/models.py), so the
description cannot drift from what Metro validates; the rest are written here in the wire shape that
core/wire/responses.py and core/access/accounts.py render. Request bodies state what Metro accepts
(Google's camelCase names; Metro also takes snake_case, which the description leaves out).
"""

from __future__ import annotations

from pydantic.json_schema import models_json_schema

from chalicelib.api.openapi import replay, schema_registry
from chalicelib.api.openapi.parts import REF, STRING, STRING_MAP, STRINGS, Schema, array, nullable_fields, obj, ref
from chalicelib.core import limits
from chalicelib.core.wire.models import PushConfig, Subscription, Topic

AREAS = (schema_registry, replay)  # the areas described in modules of their own


EMAIL = r"^[^@\s]{1,64}@[^@\s]{1,255}$"  # as api/account_requests.py checks it ("" clears a user's email)
ACK_IDS = array({"type": "string", "minLength": 1}, minItems=1)


def _model_schemas() -> dict[str, Schema]:
    """Topic, Subscription and PushConfig (with the models they nest) as pydantic states them."""
    models = [(Topic, "validation"), (Subscription, "validation"), (PushConfig, "validation")]
    _, schemas = models_json_schema(models, by_alias=True, ref_template=REF)  # type: ignore[arg-type]
    return dict(schemas["$defs"])


_ERROR = obj({"error": obj({
    "code": {"type": "integer", "description": "the HTTP status"},
    "message": STRING,
    "status": {"type": "string", "description": "google.rpc.Code name, e.g. INVALID_ARGUMENT"},
    "details": array({"type": "object"}),
}, ("code", "message", "status"))}, ("error",))

_MESSAGE = obj({"data": {"type": "string", "format": "byte"}, "attributes": STRING_MAP, "orderingKey": STRING,
                 "messageId": STRING, "publishTime": STRING})
_RECEIVED = obj({"ackId": STRING, "message": ref("PubsubMessage"), "deliveryAttempt": {"type": "integer"}},
                 ("ackId", "message"))
_BINDINGS = array(obj({"role": STRING, "members": STRINGS, "condition": {"type": "object"}}))
_POLICY = obj({"version": {"type": "integer"}, "etag": STRING, "bindings": _BINDINGS})
INT32 = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^-?[0-9]{1,10}$"}]}  # proto3 JSON reads both
_PROJECT_ROLES = obj({"project": STRING, "roles": STRINGS, "topics": STRINGS, "subscriptions": STRINGS})
_AMS_PROJECT = obj({"name": STRING, "created_on": STRING, "modified_on": STRING, "created_by": STRING,
                     "description": STRING})
_AMS_USER = obj({"uuid": STRING, "name": STRING, "projects": array(ref("ProjectRoles")), "token": STRING,
                  "email": STRING, "service_roles": STRINGS, "first_name": STRING, "last_name": STRING,
                  "organization": STRING, "description": STRING, "created_on": STRING, "modified_on": STRING,
                  "created_by": STRING})

# Request bodies.
_REQUESTS: dict[str, Schema] = {
    "PublishRequest": obj({"messages": array(ref("PubsubMessage"), minItems=1)}, ("messages",)),
    "UpdateTopicRequest": obj({"topic": ref("Topic"), "updateMask": STRING}, ("topic", "updateMask")),
    "UpdateSubscriptionRequest": obj({"subscription": ref("Subscription"), "updateMask": STRING},
                                      ("subscription", "updateMask")),
    "PullRequest": obj({"maxMessages": {"type": "integer", "minimum": 1, "maximum": limits.MAX_PULL_MESSAGES},
                         "returnImmediately": {"type": "boolean"}}, ("maxMessages",)),
    "AcknowledgeRequest": obj({"ackIds": ACK_IDS}, ("ackIds",)),
    "ModifyAckDeadlineRequest": obj({"ackIds": ACK_IDS, "ackDeadlineSeconds": {
        "type": "integer", "minimum": 0, "maximum": limits.MODIFY_DEADLINE_MAX}}, ("ackIds", "ackDeadlineSeconds")),
    "ModifyPushConfigRequest": obj({"pushConfig": ref("PushConfig")}),
    "Empty": obj({}),
    "AclRequest": obj({"authorized_users": STRINGS}),
    "GetIamPolicyRequest": obj({"options": nullable_fields(obj({"requestedPolicyVersion": INT32}))}),
    "PolicyRequest": obj({"version": INT32, "etag": STRING, "bindings": _BINDINGS}),
    "SetIamPolicyRequest": obj({"policy": ref("PolicyRequest")}, ("policy",)),
    "TestIamPermissionsRequest": obj({"permissions": STRINGS}),
    "ProjectRequest": obj({"description": STRING}),
    "Declaration": obj({section: array({"type": "object"}) for section in
                        ("projects", "users", "schemas", "topics", "subscriptions", "acls")}),
    "PushIdentitiesRequest": obj({"service_accounts": array({"type": "string", "pattern": EMAIL})}),
    "UserRequest": obj({"projects": array(obj({"project": STRING, "roles": STRINGS})), "service_roles": STRINGS,
                         "email": {"type": "string", "pattern": f"^$|{EMAIL}"}, "first_name": STRING,
                         "last_name": STRING,
                         "organization": STRING, "description": STRING}),
    "MemberRolesRequest": obj({"roles": STRINGS}),
}

# Responses.
_RESPONSES: dict[str, Schema] = {
    "Error": _ERROR,
    "PubsubMessage": _MESSAGE,
    "PublishResponse": obj({"messageIds": STRINGS}, ("messageIds",)),
    "ReceivedMessage": _RECEIVED,
    "PullResponse": obj({"receivedMessages": array(ref("ReceivedMessage"))}),
    "ListTopicsResponse": obj({"topics": array(ref("Topic")), "nextPageToken": STRING}),
    "ListSubscriptionsResponse": obj({"subscriptions": array(ref("Subscription")), "nextPageToken": STRING}),
    "ListTopicSubscriptionsResponse": obj({"subscriptions": STRINGS, "nextPageToken": STRING}),
    "Metrics": obj({"metrics": array({"type": "object"})}, ("metrics",)),
    "AuthorizedUsers": obj({"authorized_users": STRINGS}, ("authorized_users",)),
    "Policy": _POLICY,
    "TestIamPermissionsResponse": obj({"permissions": STRINGS}),
    "AmsProject": _AMS_PROJECT,
    "AmsProjects": obj({"projects": array(ref("AmsProject"))}, ("projects",)),
    "ProjectRoles": _PROJECT_ROLES,
    "AmsUser": _AMS_USER,
    "AmsUsers": obj({"users": array(ref("AmsUser")), "nextPageToken": STRING, "totalSize": {"type": "integer"}},
                     ("users",)),
    "PushIdentities": obj({"service_accounts": STRINGS}, ("service_accounts",)),
    "Declared": obj({"applied": STRINGS, "notUpdated": STRINGS,
                     "tokens": array(obj({"user": STRING, "token": STRING}, ("user", "token")))},
                    ("applied", "notUpdated", "tokens")),
    "Jwks": obj({"keys": array({"type": "object"})}, ("keys",)),
    "Status": obj({"status": STRING, "push_functionality": STRING, "push_servers": array({"type": "object"})},
                  ("status", "push_functionality", "push_servers")),
    "Version": obj({name: STRING for name in ("release", "distro", "python", "chalice", "os", "architecture")},
                   ("release", "distro")),
    "OpenApi": obj({"openapi": STRING, "paths": {"type": "object"}}, ("openapi", "paths")),
    "Root": obj({"name": STRING, "description": STRING, "version": STRING, "docs": STRING, "openapi": STRING,
                 "ports": obj({"rest": {"type": "integer"}, "ams": {"type": "integer"}}, ("rest", "ams")),
                 "grpc": STRING}, ("name", "version", "docs", "openapi", "ports")),
}


def components() -> dict[str, Schema]:
    out = {**_model_schemas(), **_RESPONSES}
    for area in AREAS:
        out.update(area.RESPONSES)
    for requests in (_REQUESTS, *(area.REQUESTS for area in AREAS)):
        out.update({name: nullable_fields(schema) for name, schema in requests.items()})
    return out
