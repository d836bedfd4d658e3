"""gRPC calls as the REST calls they are: each RPC of ``google.pubsub.v1`` (and the IAM mixin) with its request
and response messages and its HTTP rule, as Google's API declares them (``google.api.http`` in pubsub.proto and
schema.proto). A unary RPC is served by transcoding it: its path fields fill the rule's URL template, that URL
is matched against the routes of the method registry (api/registry.py), the rest of the request becomes the
JSON body or the query, and the call runs through the very dispatch REST uses (api/routes.execute): the same
typed requests, the same permission rules and resource checks, the same errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.iam.v1 import iam_policy_pb2, policy_pb2
from google.protobuf import empty_pb2, json_format
from google.protobuf.message import Message
from google.pubsub_v1 import types

from chalicelib.api import registry
from chalicelib.api.dialect import Dialect
from chalicelib.api.routes import Call
from chalicelib.core.errors import InvalidArgument, NotFound

PUBLISHER, SUBSCRIBER = "google.pubsub.v1.Publisher", "google.pubsub.v1.Subscriber"
SCHEMAS, IAM = "google.pubsub.v1.SchemaService", "google.iam.v1.IAMPolicy"


@dataclass(frozen=True)
class Rpc:
    """One unary RPC and its HTTP rule: ``template`` with ``{field=pattern}`` parts, the request field sent as
    the body (``*``: every field the URL does not take; ``""``: none, the rest goes to the query)."""

    service: str
    name: str
    request: type[Message]
    response: type[Message]
    http: str
    template: str
    body: str = ""

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.name}"


def _pb(cls: Any) -> type[Message]:
    return cls.pb()  # type: ignore[no-any-return]


_T, _S, _N = "projects/*/topics/*", "projects/*/subscriptions/*", "projects/*/snapshots/*"
_SC, _P, EMPTY = "projects/*/schemas/*", "projects/*", empty_pb2.Empty
RPCS: tuple[Rpc, ...] = (
    Rpc(PUBLISHER, "CreateTopic", _pb(types.Topic), _pb(types.Topic), "PUT", f"/v1/{{name={_T}}}", "*"),
    Rpc(PUBLISHER, "UpdateTopic", _pb(types.UpdateTopicRequest), _pb(types.Topic), "PATCH",
        f"/v1/{{topic.name={_T}}}", "*"),
    Rpc(PUBLISHER, "Publish", _pb(types.PublishRequest), _pb(types.PublishResponse), "POST",
        f"/v1/{{topic={_T}}}:publish", "*"),
    Rpc(PUBLISHER, "GetTopic", _pb(types.GetTopicRequest), _pb(types.Topic), "GET", f"/v1/{{topic={_T}}}"),
    Rpc(PUBLISHER, "ListTopics", _pb(types.ListTopicsRequest), _pb(types.ListTopicsResponse), "GET",
        f"/v1/{{project={_P}}}/topics"),
    Rpc(PUBLISHER, "ListTopicSubscriptions", _pb(types.ListTopicSubscriptionsRequest),
        _pb(types.ListTopicSubscriptionsResponse), "GET", f"/v1/{{topic={_T}}}/subscriptions"),
    Rpc(PUBLISHER, "ListTopicSnapshots", _pb(types.ListTopicSnapshotsRequest), _pb(types.ListTopicSnapshotsResponse),
        "GET", f"/v1/{{topic={_T}}}/snapshots"),
    Rpc(PUBLISHER, "DeleteTopic", _pb(types.DeleteTopicRequest), EMPTY, "DELETE", f"/v1/{{topic={_T}}}"),
    Rpc(PUBLISHER, "DetachSubscription", _pb(types.DetachSubscriptionRequest),
        _pb(types.DetachSubscriptionResponse), "POST", f"/v1/{{subscription={_S}}}:detach"),
    Rpc(SUBSCRIBER, "CreateSubscription", _pb(types.Subscription), _pb(types.Subscription), "PUT",
        f"/v1/{{name={_S}}}", "*"),
    Rpc(SUBSCRIBER, "GetSubscription", _pb(types.GetSubscriptionRequest), _pb(types.Subscription), "GET",
        f"/v1/{{subscription={_S}}}"),
    Rpc(SUBSCRIBER, "UpdateSubscription", _pb(types.UpdateSubscriptionRequest), _pb(types.Subscription), "PATCH",
        f"/v1/{{subscription.name={_S}}}", "*"),
    Rpc(SUBSCRIBER, "ListSubscriptions", _pb(types.ListSubscriptionsRequest), _pb(types.ListSubscriptionsResponse),
        "GET", f"/v1/{{project={_P}}}/subscriptions"),
    Rpc(SUBSCRIBER, "DeleteSubscription", _pb(types.DeleteSubscriptionRequest), EMPTY, "DELETE",
        f"/v1/{{subscription={_S}}}"),
    Rpc(SUBSCRIBER, "ModifyAckDeadline", _pb(types.ModifyAckDeadlineRequest), EMPTY, "POST",
        f"/v1/{{subscription={_S}}}:modifyAckDeadline", "*"),
    Rpc(SUBSCRIBER, "Acknowledge", _pb(types.AcknowledgeRequest), EMPTY, "POST",
        f"/v1/{{subscription={_S}}}:acknowledge", "*"),
    Rpc(SUBSCRIBER, "Pull", _pb(types.PullRequest), _pb(types.PullResponse), "POST", f"/v1/{{subscription={_S}}}:pull",
        "*"),
    Rpc(SUBSCRIBER, "ModifyPushConfig", _pb(types.ModifyPushConfigRequest), EMPTY, "POST",
        f"/v1/{{subscription={_S}}}:modifyPushConfig", "*"),
    Rpc(SUBSCRIBER, "GetSnapshot", _pb(types.GetSnapshotRequest), _pb(types.Snapshot), "GET",
        f"/v1/{{snapshot={_N}}}"),
    Rpc(SUBSCRIBER, "ListSnapshots", _pb(types.ListSnapshotsRequest), _pb(types.ListSnapshotsResponse), "GET",
        f"/v1/{{project={_P}}}/snapshots"),
    Rpc(SUBSCRIBER, "CreateSnapshot", _pb(types.CreateSnapshotRequest), _pb(types.Snapshot), "PUT",
        f"/v1/{{name={_N}}}", "*"),
    Rpc(SUBSCRIBER, "UpdateSnapshot", _pb(types.UpdateSnapshotRequest), _pb(types.Snapshot), "PATCH",
        f"/v1/{{snapshot.name={_N}}}", "*"),
    Rpc(SUBSCRIBER, "DeleteSnapshot", _pb(types.DeleteSnapshotRequest), EMPTY, "DELETE", f"/v1/{{snapshot={_N}}}"),
    Rpc(SUBSCRIBER, "Seek", _pb(types.SeekRequest), _pb(types.SeekResponse), "POST", f"/v1/{{subscription={_S}}}:seek",
        "*"),
    Rpc(SCHEMAS, "CreateSchema", _pb(types.CreateSchemaRequest), _pb(types.Schema), "POST",
        f"/v1/{{parent={_P}}}/schemas", "schema"),
    Rpc(SCHEMAS, "GetSchema", _pb(types.GetSchemaRequest), _pb(types.Schema), "GET", f"/v1/{{name={_SC}}}"),
    Rpc(SCHEMAS, "ListSchemas", _pb(types.ListSchemasRequest), _pb(types.ListSchemasResponse), "GET",
        f"/v1/{{parent={_P}}}/schemas"),
    Rpc(SCHEMAS, "ListSchemaRevisions", _pb(types.ListSchemaRevisionsRequest),
        _pb(types.ListSchemaRevisionsResponse), "GET", f"/v1/{{name={_SC}}}:listRevisions"),
    Rpc(SCHEMAS, "CommitSchema", _pb(types.CommitSchemaRequest), _pb(types.Schema), "POST",
        f"/v1/{{name={_SC}}}:commit", "*"),
    Rpc(SCHEMAS, "RollbackSchema", _pb(types.RollbackSchemaRequest), _pb(types.Schema), "POST",
        f"/v1/{{name={_SC}}}:rollback", "*"),
    Rpc(SCHEMAS, "DeleteSchemaRevision", _pb(types.DeleteSchemaRevisionRequest), _pb(types.Schema), "DELETE",
        f"/v1/{{name={_SC}}}:deleteRevision"),
    Rpc(SCHEMAS, "DeleteSchema", _pb(types.DeleteSchemaRequest), EMPTY, "DELETE", f"/v1/{{name={_SC}}}"),
    Rpc(SCHEMAS, "ValidateSchema", _pb(types.ValidateSchemaRequest), _pb(types.ValidateSchemaResponse), "POST",
        f"/v1/{{parent={_P}}}/schemas:validate", "*"),
    Rpc(SCHEMAS, "ValidateMessage", _pb(types.ValidateMessageRequest), _pb(types.ValidateMessageResponse), "POST",
        f"/v1/{{parent={_P}}}/schemas:validateMessage", "*"),
    # The IAM mixin, on whatever resource ``resource`` names (Metro keeps ACLs on topics and subscriptions).
    Rpc(IAM, "SetIamPolicy", iam_policy_pb2.SetIamPolicyRequest, policy_pb2.Policy, "POST",
        "/v1/{resource=**}:setIamPolicy", "*"),
    Rpc(IAM, "GetIamPolicy", iam_policy_pb2.GetIamPolicyRequest, policy_pb2.Policy, "POST",
        "/v1/{resource=**}:getIamPolicy", "*"),
    Rpc(IAM, "TestIamPermissions", iam_policy_pb2.TestIamPermissionsRequest,
        iam_policy_pb2.TestIamPermissionsResponse, "POST", "/v1/{resource=**}:testIamPermissions", "*"),
)

_FIELD = re.compile(r"{([\w.]+)=([^}]+)}")
_SEGMENT = re.compile(r"[^/]+")


def _field(message: Message, dotted: str) -> str:
    value: Any = message
    for part in dotted.split("."):
        value = getattr(value, part)
    return str(value)


def _pattern(glob: str) -> re.Pattern[str]:
    """A path template's pattern (``projects/*/topics/*``, ``**``) as a regular expression."""
    parts = [".+" if p == "**" else "[^/]+" if p == "*" else re.escape(p) for p in glob.split("/")]
    return re.compile("/".join(parts) + r"\Z")


def url_of(rpc: Rpc, request: Message) -> tuple[str, set[str]]:
    """The URL path the request's fields fill in, and the top-level fields the URL took."""
    taken: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        dotted, glob = match.group(1), match.group(2)
        value = _field(request, dotted)
        if not _pattern(glob).match(value):
            raise InvalidArgument(f"Invalid resource name given ({dotted}={value[:300]})")
        if "." not in dotted:
            taken.add(dotted)
        return value

    return _FIELD.sub(fill, rpc.template), taken


def _route_patterns() -> list[tuple[str, re.Pattern[str], list[str]]]:
    out = []
    for route in registry.ROUTES:
        names = re.findall(r"{(\w+)}", route)
        regex = re.sub(r"{\w+}", lambda _: "([^/]+)", re.escape(route).replace(r"\{", "{").replace(r"\}", "}"))
        out.append((route, re.compile(regex + r"\Z"), names))
    return out


_ROUTES = _route_patterns()


def match_route(path: str) -> tuple[str, dict[str, str]]:
    """The registry's route template a URL path falls under, and its URL parameters (NOT_FOUND for none)."""
    candidates = [(route, m, names) for route, pattern, names in _ROUTES if (m := pattern.match(path))]
    if not candidates:
        raise NotFound(f"The requested URL {path} was not found on this server.")
    route, found, names = min(candidates, key=lambda c: c[0].count("{"))  # literal segments win
    return route, dict(zip(names, found.groups(), strict=True))


def _json(message: Message) -> dict[str, Any]:
    return dict(json_format.MessageToDict(message, preserving_proto_field_name=False))


def call_of(rpc: Rpc, request: Message, token: str) -> Call:
    """The REST call an RPC is: route, URL parameters, body and query, as Google's HTTP rule maps them."""
    path, taken = url_of(rpc, request)
    route, params = match_route(path)
    fields = _json(request)
    camel_taken = {request.DESCRIPTOR.fields_by_name[f].json_name for f in taken}
    rest = {k: v for k, v in fields.items() if k not in camel_taken}
    if rpc.body == "*":
        body, query = rest, {}
    elif rpc.body:
        body = rest.pop(request.DESCRIPTOR.fields_by_name[rpc.body].json_name, {})
        query = _query(rest)
    else:
        body, query = {}, _query(rest)
    return Call(Dialect.GOOGLE, route, rpc.http, params, lambda: body, query, token, path)


def _query(fields: Mapping[str, Any]) -> dict[str, str]:
    """Scalar fields as query parameters (the REST edge reads ``pageSize``, ``pageToken``, ``view``, ...)."""
    return {k: v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in fields.items() if not isinstance(v, (dict, list))}


def response_of(rpc: Rpc, answer: dict[str, Any]) -> Message:
    """The JSON a handler answers, as the RPC's response message (fields Metro adds and gRPC lacks are left)."""
    return json_format.ParseDict(answer, rpc.response(), ignore_unknown_fields=True)
