"""One function per API method: parse the request into a typed value (api/requests.py), call one use case,
return its typed result. The route tables map (HTTP method, verb) to these functions; api/routes.py
dispatches and api/http.py renders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.api import account_requests, requests, snapshot_requests
from chalicelib.api.references import authorized
from chalicelib.core.identity import OPEN_PRINCIPAL, Principal
from chalicelib.core.models import Subscription
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.responses import EMPTY, ToWire
from chalicelib.runtime import services


@dataclass(frozen=True)
class Incoming:
    """A request as a handler sees it: the JSON body (``{}`` for GET and DELETE), the query parameters, and
    the principal it acts as (already authorized for the route by api/routes.py)."""

    body: Any
    params: Mapping[str, str]
    principal: Principal = OPEN_PRINCIPAL


Result = ToWire | dict[str, Any]  # pull's results are still plain JSON objects
Handler = Callable[[Name, Incoming], Result]
CollectionHandler = Callable[[str, Incoming], Result]


def reported(rec: SubscriptionRecord) -> Subscription:
    return rec.spec.reported()


# -- topics ---------------------------------------------------------------------------------------------
def create_topic(name: Name, incoming: Incoming) -> Result:
    return services().admin.create_topic(name, authorized(incoming, requests.topic_request(incoming.body, name)))


def get_topic(name: Name, incoming: Incoming) -> Result:
    return services().admin.get_topic(name)


def patch_topic(name: Name, incoming: Incoming) -> Result:
    return services().admin.patch_topic(name, authorized(incoming, requests.update_topic_request(incoming.body, name)))


def delete_topic(name: Name, incoming: Incoming) -> Result:
    services().admin.delete_topic(name)
    return EMPTY


def publish(name: Name, incoming: Incoming) -> Result:
    return services().publish.publish(name, requests.publish_request(incoming.body))


def topic_metrics(name: Name, incoming: Incoming) -> Result:
    return services().usage.topic_metrics(name)


def topic_subscriptions(name: Name, incoming: Incoming) -> Result:
    return services().admin.topic_subscription_names(name, requests.page_request(incoming.params))


# -- subscriptions --------------------------------------------------------------------------------------
def create_subscription(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, requests.subscription_request(incoming.body, name))
    return reported(services().admin.create_subscription(name, request))


def get_subscription(name: Name, incoming: Incoming) -> Result:
    return reported(services().admin.get_subscription(name))


def patch_subscription(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, requests.update_subscription_request(incoming.body, name))
    return reported(services().admin.patch_subscription(name, request))


def delete_subscription(name: Name, incoming: Incoming) -> Result:
    services().admin.delete_subscription(name)
    return EMPTY


def pull(name: Name, incoming: Incoming) -> Result:
    return services().pull.pull(name, requests.pull_request(incoming.body))


def acknowledge(name: Name, incoming: Incoming) -> Result:
    return services().pull.acknowledge(name, requests.acknowledge_request(incoming.body))


def modify_ack_deadline(name: Name, incoming: Incoming) -> Result:
    return services().pull.modify_ack_deadline(name, requests.modify_ack_deadline_request(incoming.body))


def modify_push_config(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, requests.modify_push_config_request(incoming.body, name))
    services().admin.modify_push_config(name, request)
    return EMPTY


def detach_subscription(name: Name, incoming: Incoming) -> Result:
    services().admin.detach_subscription(name)
    return EMPTY


def subscription_metrics(name: Name, incoming: Incoming) -> Result:
    return services().usage.subscription_metrics(name)


def seek(name: Name, incoming: Incoming) -> Result:
    return services().seek.seek(name, authorized(incoming, snapshot_requests.seek_request(incoming.body, name)))


def seek_status(name: Name, incoming: Incoming) -> Result:
    return services().seek.status(name)


# -- collections and projects ---------------------------------------------------------------------------
def list_topics(project: str, incoming: Incoming) -> Result:
    return services().admin.list_topics(project, requests.page_request(incoming.params))


def list_subscriptions(project: str, incoming: Incoming) -> Result:
    return services().admin.list_subscriptions(project, requests.page_request(incoming.params)).map(reported)


def project_metrics(project: str, incoming: Incoming) -> Result:
    return services().usage.project_metrics(project)


# -- access lists: AMS's :acl and :modifyAcl, Google's IAM policy methods, on topics and subscriptions ------
def get_acl(name: Name, incoming: Incoming) -> Result:
    return services().access.authorized_users(name)


def modify_acl(name: Name, incoming: Incoming) -> Result:
    services().access.modify_acl(name, account_requests.acl_request(incoming.body))
    return EMPTY


def get_iam_policy(name: Name, incoming: Incoming) -> Result:
    account_requests.get_policy_request(incoming.body)
    return services().access.policy(name)


def set_iam_policy(name: Name, incoming: Incoming) -> Result:
    return services().access.set_policy(name, account_requests.set_policy_request(incoming.body, name.collection))


def test_iam_permissions(name: Name, incoming: Incoming) -> Result:
    query = account_requests.permissions_request(incoming.body)
    return services().access.test_permissions(incoming.principal, name, query)


ACL: Mapping[tuple[str, str], Handler] = {
    ("GET", "acl"): get_acl,
    ("POST", "modifyAcl"): modify_acl,
    ("GET", "getIamPolicy"): get_iam_policy,
    ("POST", "getIamPolicy"): get_iam_policy,
    ("POST", "setIamPolicy"): set_iam_policy,
    ("POST", "testIamPermissions"): test_iam_permissions,
}


# -- route tables: (HTTP method, verb after the colon) -> handler ---------------------------------------
TOPIC: Mapping[tuple[str, str], Handler] = {
    ("PUT", ""): create_topic,
    ("GET", ""): get_topic,
    ("PATCH", ""): patch_topic,
    ("DELETE", ""): delete_topic,
    ("POST", "publish"): publish,
    ("GET", "metrics"): topic_metrics,
    **ACL,
}
TOPIC_SUBSCRIPTIONS: Mapping[tuple[str, str], Handler] = {
    ("GET", ""): topic_subscriptions,
}
SUBSCRIPTION: Mapping[tuple[str, str], Handler] = {
    ("PUT", ""): create_subscription,
    ("GET", ""): get_subscription,
    ("PATCH", ""): patch_subscription,
    ("DELETE", ""): delete_subscription,
    ("POST", "pull"): pull,
    ("POST", "acknowledge"): acknowledge,
    ("POST", "modifyAckDeadline"): modify_ack_deadline,
    ("POST", "modifyPushConfig"): modify_push_config,
    ("POST", "detach"): detach_subscription,
    ("GET", "metrics"): subscription_metrics,
    **ACL,
    ("POST", "seek"): seek,
    ("GET", "seekStatus"): seek_status,
}
COLLECTION: Mapping[str, CollectionHandler] = {  # collections are only listed (GET)
    "topics": list_topics,
    "subscriptions": list_subscriptions,
}
