"""The ARGO Messaging Service dialect's handlers: where AMS's request or response shape differs from
Google's, the method is served here instead of by api/handlers.py (``AMS_SHAPES``); every other method is
served by the same handler for both dialects. api/routes.py picks the handler from the endpoint's dialect.

AMS's own verbs (``:verifyPushEndpoint`` and, for the operational routes, ``/v1/status``...) are also here;
they answer on both endpoints, as ``:acl`` and ``:metrics`` do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.api import handlers, parsing, schema_handlers
from chalicelib.api import permissions as P
from chalicelib.api.ams import schema_handlers as ams_schema_handlers
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.methods import Method
from chalicelib.api.references import authorized
from chalicelib.core import names
from chalicelib.core.access.identity import Action, allowed
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.replay import offsets
from chalicelib.core.timefmt import format_timestamp
from chalicelib.core.wire import ams
from chalicelib.core.wire.fields import int_field
from chalicelib.core.wire.models import AmsPush, Subscription, Topic
from chalicelib.core.wire.responses import EMPTY
from chalicelib.runtime import services

_SUBSCRIPTION_FIELDS = {"name", "topic", "ackDeadlineSeconds", "ack_deadline_seconds", "pushConfig", "push_config"}


# -- rendering ------------------------------------------------------------------------------------------
def shows_push_secret(incoming: Incoming, project: str) -> bool:
    """Whether the caller sees the generated push authorization value of ``project``'s subscriptions: its
    project_admins and the service_admins do; a consumer, who may read the subscription too, does not."""
    return allowed(incoming.principal, Action.PROJECT_ADMIN, project)


def subscription_wire(rec: SubscriptionRecord, show_secret: bool = False) -> dict[str, Any]:
    spec = rec.spec
    endpoint = spec.push_config.push_endpoint if spec.push_config is not None else ""
    push = spec.ams_push if spec.ams_push is not None else AmsPush(verified=True)  # made through Google's API
    return {"name": ams.ams_name(spec.name), "topic": ams.ams_name(spec.topic),
            "pushConfig": ams.push_config_wire(endpoint, push, show_secret), "ackDeadlineSeconds": spec.ack_deadline,
            "createdOn": format_timestamp(rec.created)}


def _page_wire(field: str, items: list[Any], next_page_token: str) -> dict[str, Any]:
    """AMS's list shape: the list, the next page token and the size (of this page: Metro does not count ahead)."""
    return {field: items, "nextPageToken": next_page_token, "totalSize": len(items)}


# -- topics ---------------------------------------------------------------------------------------------
def topic_wire(topic: Topic) -> dict[str, Any]:
    out = {"name": ams.ams_name(topic.name)}
    if topic.schema_settings is not None and topic.schema_settings.schema_:
        out["schema"] = topic.schema_settings.schema_
    return out


def create_topic(name: Name, incoming: Incoming) -> Result:
    """AMS's body is empty, or ``{"schema": "projects/p/schemas/s"}``."""
    body = incoming.body or {}
    if set(body) == {"schema"}:
        topic = Topic(schema_settings=ams_schema_handlers.settings_for(incoming, body["schema"]))
    else:
        topic = authorized(incoming, parsing.topic_request(body, name))
    return topic_wire(services().admin.create_topic(name, topic))


def get_topic(name: Name, incoming: Incoming) -> Result:
    return topic_wire(services().admin.get_topic(name))


def list_topics(project: str, incoming: Incoming) -> Result:
    page = services().admin.list_topics(project, parsing.page_request(incoming.params))
    return _page_wire("topics", [{"name": ams.ams_name(t.name)} for t in page.items],
                      page.next_page_token)


def topic_subscriptions(name: Name, incoming: Incoming) -> Result:
    page = services().admin.topic_subscription_names(name, parsing.page_request(incoming.params))
    return {"subscriptions": [ams.ams_name(s) for s in page.items], "nextPageToken": page.next_page_token}


# -- subscriptions --------------------------------------------------------------------------------------
def _subscription(body: Any, name: Name) -> Subscription:
    if not isinstance(body, dict):
        raise InvalidArgument("Invalid JSON payload received: the request must be a JSON object")
    unknown = set(body) - _SUBSCRIPTION_FIELDS
    if unknown:
        raise InvalidArgument(f'Invalid subscription argument: unknown field "{sorted(unknown)[0]}"')
    given = ams.google_name(body.get("name"))
    if given and given != name.path:
        raise InvalidArgument(f"The name in the body ({given}) does not match the URL ({name.path}).")
    topic = ams.google_name(body.get("topic"))
    if not isinstance(topic, str) or not topic:
        raise InvalidArgument("Invalid subscription argument: topic must be a topic name")
    return Subscription(topic=names.parse(topic, "topics").path,
                        ack_deadline_seconds=int_field(body, "ackDeadlineSeconds", "ack_deadline_seconds"))


def create_subscription(name: Name, incoming: Incoming) -> Result:
    body = incoming.body
    subscription = authorized(incoming, _subscription(body, name))
    push = ams.push_request(body.get("pushConfig", body.get("push_config")))
    made = services().ams.create_subscription(name, subscription, push)
    return subscription_wire(made, shows_push_secret(incoming, name.project))


def get_subscription(name: Name, incoming: Incoming) -> Result:
    return subscription_wire(services().admin.get_subscription(name), shows_push_secret(incoming, name.project))


def list_subscriptions(project: str, incoming: Incoming) -> Result:
    page = services().admin.list_subscriptions(project, parsing.page_request(incoming.params))
    shown = shows_push_secret(incoming, project)
    return _page_wire("subscriptions", [subscription_wire(rec, shown) for rec in page.items], page.next_page_token)


def pull(name: Name, incoming: Incoming) -> Result:
    answer = services().pull.pull(name, parsing.pull_request(incoming.body))
    return ams.received_wire(answer.to_wire())


def modify_ack_deadline(name: Name, incoming: Incoming) -> Result:
    """With ack ids, Google's per-message call; without, AMS's subscription-wide deadline."""
    body = incoming.body
    if "ackIds" in body or "ack_ids" in body:
        return handlers.modify_ack_deadline(name, incoming)
    services().ams.set_ack_deadline(name, int_field(body, "ackDeadlineSeconds", "ack_deadline_seconds"))
    return EMPTY


def modify_push_config(name: Name, incoming: Incoming) -> Result:
    body = incoming.body
    services().ams.modify_push_config(name, ams.push_request(body.get("pushConfig", body.get("push_config"))))
    return EMPTY


def verify_push_endpoint(name: Name, incoming: Incoming) -> Result:
    services().ams.verify_push_endpoint(name)
    return EMPTY


def get_offsets(name: Name, incoming: Incoming) -> Result:
    return services().offsets.offsets(name)


def time_to_offset(name: Name, incoming: Incoming) -> Result:
    return services().offsets.time_to_offset(name, offsets.time_ms(incoming.params.get("time", "")))


def modify_offset(name: Name, incoming: Incoming) -> Result:
    services().offsets.modify_offset(name, offsets.offset_value(incoming.body.get("offset")))
    return EMPTY


# -- declarations ---------------------------------------------------------------------------------------
# AMS's verbs, served on both endpoints.
S = "subscriptions"
METHODS: tuple[Method, ...] = (
    Method(P.SUBSCRIPTION, "POST", "verifyPushEndpoint", verify_push_endpoint, P.SUBSCRIPTION_ADMIN,
           "Verify the push endpoint's ownership (AMS)", body="Empty", tag=S),
    Method(P.SUBSCRIPTION, "GET", "offsets", get_offsets, P.CONSUME, "The subscription's offsets (AMS)", "Offsets",
           tag=S),
    Method(P.SUBSCRIPTION, "GET", "timeToOffset", time_to_offset, P.CONSUME,
           "The offset of the first message published at or after time (AMS)", "Offset", query=("time",),
           required=("time",), tag=S),
    Method(P.SUBSCRIPTION, "POST", "modifyOffset", modify_offset, P.CONSUME,  # a seek, as Google's :seek
           "Move the subscription to an offset: a seek (AMS)", body="ModifyOffsetRequest", tag=S),
)
# The method both dialects share -> the AMS dialect's handler, where AMS's shapes differ from Google's.
AMS_SHAPES: Mapping[Any, Any] = {
    handlers.create_topic: create_topic,
    handlers.get_topic: get_topic,
    handlers.list_topics: list_topics,
    handlers.topic_subscriptions: topic_subscriptions,
    handlers.create_subscription: create_subscription,
    handlers.get_subscription: get_subscription,
    handlers.list_subscriptions: list_subscriptions,
    handlers.pull: pull,
    handlers.modify_ack_deadline: modify_ack_deadline,
    handlers.modify_push_config: modify_push_config,
    schema_handlers.get_schema: ams_schema_handlers.get_schema,
    schema_handlers.list_schemas: ams_schema_handlers.list_schemas,
}
