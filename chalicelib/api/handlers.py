"""One function per API method of Google's topics and subscriptions (and the ACL views of both): parse the
request into a typed value (api/parsing.py), call one use case, return its typed result. ``METHODS``
declares each (api/methods.py); api/routes.py dispatches and api/http.py renders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.api import account_requests, parsing, snapshot_requests
from chalicelib.api import permissions as P
from chalicelib.api.methods import Method
from chalicelib.api.permissions import Rule
from chalicelib.api.references import authorized
from chalicelib.core.access.identity import OPEN_PRINCIPAL, Principal
from chalicelib.core.names import Name
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.models import Subscription
from chalicelib.core.wire.responses import EMPTY, ToWire
from chalicelib.runtime import services


@dataclass(frozen=True)
class Incoming:
    """A request as a handler sees it: the JSON object of its body (``{}`` for GET and DELETE; api/routes.py
    refuses any other JSON value), the query parameters, and the principal it acts as (already authorized for
    the method by api/routes.py)."""

    body: dict[str, Any]
    params: Mapping[str, str]
    principal: Principal = OPEN_PRINCIPAL


Result = ToWire | dict[str, Any]  # AMS's shapes are plain JSON objects
Handler = Callable[[Name, Incoming], Result]
CollectionHandler = Callable[[str, Incoming], Result]


def reported(rec: SubscriptionRecord) -> Subscription:
    return rec.spec.reported()


# -- topics ---------------------------------------------------------------------------------------------
def create_topic(name: Name, incoming: Incoming) -> Result:
    return services().admin.create_topic(name, authorized(incoming, parsing.topic_request(incoming.body, name)))


def get_topic(name: Name, incoming: Incoming) -> Result:
    return services().admin.get_topic(name)


def patch_topic(name: Name, incoming: Incoming) -> Result:
    return services().admin.patch_topic(name, authorized(incoming, parsing.update_topic_request(incoming.body, name)))


def delete_topic(name: Name, incoming: Incoming) -> Result:
    services().admin.delete_topic(name)
    return EMPTY


def publish(name: Name, incoming: Incoming) -> Result:
    return services().publish.publish(name, parsing.publish_request(incoming.body))


def topic_metrics(name: Name, incoming: Incoming) -> Result:
    return services().usage.topic_metrics(name)


def topic_subscriptions(name: Name, incoming: Incoming) -> Result:
    return services().admin.topic_subscription_names(name, parsing.page_request(incoming.params))


# -- subscriptions --------------------------------------------------------------------------------------
def create_subscription(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, parsing.subscription_request(incoming.body, name))
    return reported(services().admin.create_subscription(name, request))


def get_subscription(name: Name, incoming: Incoming) -> Result:
    return reported(services().admin.get_subscription(name))


def patch_subscription(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, parsing.update_subscription_request(incoming.body, name))
    return reported(services().admin.patch_subscription(name, request))


def delete_subscription(name: Name, incoming: Incoming) -> Result:
    services().admin.delete_subscription(name)
    return EMPTY


def pull(name: Name, incoming: Incoming) -> Result:
    return services().pull.pull(name, parsing.pull_request(incoming.body))


def acknowledge(name: Name, incoming: Incoming) -> Result:
    return services().pull.acknowledge(name, parsing.acknowledge_request(incoming.body))


def modify_ack_deadline(name: Name, incoming: Incoming) -> Result:
    return services().pull.modify_ack_deadline(name, parsing.modify_ack_deadline_request(incoming.body))


def modify_push_config(name: Name, incoming: Incoming) -> Result:
    request = authorized(incoming, parsing.modify_push_config_request(incoming.body, name))
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
    return services().admin.list_topics(project, parsing.page_request(incoming.params))


def list_subscriptions(project: str, incoming: Incoming) -> Result:
    return services().admin.list_subscriptions(project, parsing.page_request(incoming.params)).map(reported)


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


def acl_methods(route: str, kind: str, admin: Rule, member: Rule) -> tuple[Method, ...]:
    """AMS's ``:acl``/``:modifyAcl`` and Google's IAM methods, on a topic or a subscription."""
    return (
        Method(route, "GET", "acl", get_acl, admin, f"The users on the {kind}'s ACL (AMS)", "AuthorizedUsers",
               tag=ACL_TAG),
        Method(route, "POST", "modifyAcl", modify_acl, admin, f"Replace the {kind}'s ACL (AMS)", body="AclRequest",
               tag=ACL_TAG),
        Method(route, "GET", "getIamPolicy", get_iam_policy, admin, f"The {kind}'s ACL as an IAM policy", "Policy",
               tag=ACL_TAG),
        Method(route, "POST", "getIamPolicy", get_iam_policy, admin, f"The {kind}'s ACL as an IAM policy", "Policy",
               body="GetIamPolicyRequest", tag=ACL_TAG),
        Method(route, "POST", "setIamPolicy", set_iam_policy, admin, f"Replace the {kind}'s ACL from an IAM policy",
               "Policy", body="SetIamPolicyRequest", tag=ACL_TAG),
        Method(route, "POST", "testIamPermissions", test_iam_permissions, member,
               f"Which of the given permissions the caller holds on the {kind}", "TestIamPermissionsResponse",
               body="TestIamPermissionsRequest", tag=ACL_TAG),
    )


T, S, ACL_TAG = "topics", "subscriptions", "ACL"
PAGE = ("pageSize", "pageToken")
METHODS: tuple[Method, ...] = (
    Method(P.TOPICS, "GET", "", list_topics, P.READ_PROJECT_TOPICS, "List the project's topics", "ListTopicsResponse",
           query=PAGE, tag=T),
    Method(P.TOPIC, "PUT", "", create_topic, P.TOPIC_ADMIN, "Create a topic", "Topic", body="Topic", tag=T),
    Method(P.TOPIC, "GET", "", get_topic, P.READ_TOPIC, "Get a topic", "Topic", tag=T),
    Method(P.TOPIC, "PATCH", "", patch_topic, P.TOPIC_ADMIN, "Update a topic's fields named by updateMask", "Topic",
           body="UpdateTopicRequest", tag=T),
    Method(P.TOPIC, "DELETE", "", delete_topic, P.TOPIC_ADMIN,
           "Delete a topic (its subscriptions stay, detached from it)", tag=T),
    Method(P.TOPIC, "POST", "publish", publish, P.PUBLISH, "Publish messages", "PublishResponse",
           body="PublishRequest", tag=T),
    Method(P.TOPIC, "GET", "metrics", topic_metrics, P.READ_TOPIC, "A topic's metrics (AMS)", "Metrics", tag=T),
    Method(P.TOPIC_SUBSCRIPTIONS, "GET", "", topic_subscriptions, P.READ_TOPIC, "Names of a topic's subscriptions",
           "ListTopicSubscriptionsResponse", query=PAGE, tag=T),
    Method(P.SUBSCRIPTIONS, "GET", "", list_subscriptions, P.READ_PROJECT_SUBSCRIPTIONS,
           "List the project's subscriptions", "ListSubscriptionsResponse", query=PAGE, tag=S),
    Method(P.SUBSCRIPTION, "PUT", "", create_subscription, P.SUBSCRIPTION_ADMIN, "Create a subscription",
           "Subscription", body="Subscription", tag=S),
    Method(P.SUBSCRIPTION, "GET", "", get_subscription, P.READ_SUBSCRIPTION, "Get a subscription", "Subscription",
           tag=S),
    Method(P.SUBSCRIPTION, "PATCH", "", patch_subscription, P.SUBSCRIPTION_ADMIN,
           "Update a subscription's fields named by updateMask", "Subscription", body="UpdateSubscriptionRequest",
           tag=S),
    Method(P.SUBSCRIPTION, "DELETE", "", delete_subscription, P.SUBSCRIPTION_ADMIN, "Delete a subscription", tag=S),
    Method(P.SUBSCRIPTION, "POST", "pull", pull, P.CONSUME, "Pull messages", "PullResponse", body="PullRequest",
           tag=S),
    Method(P.SUBSCRIPTION, "POST", "acknowledge", acknowledge, P.CONSUME, "Acknowledge messages",
           body="AcknowledgeRequest", tag=S),
    Method(P.SUBSCRIPTION, "POST", "modifyAckDeadline", modify_ack_deadline, P.CONSUME,
           "Extend, shorten or end (0 s: nack) ack deadlines", body="ModifyAckDeadlineRequest", tag=S),
    Method(P.SUBSCRIPTION, "POST", "modifyPushConfig", modify_push_config, P.SUBSCRIPTION_ADMIN,
           "Switch between push and pull, or change the endpoint", body="ModifyPushConfigRequest", tag=S),
    Method(P.SUBSCRIPTION, "POST", "detach", detach_subscription, P.SUBSCRIPTION_ADMIN,
           "Detach a subscription from its topic", body="Empty", tag=S),
    Method(P.SUBSCRIPTION, "GET", "metrics", subscription_metrics, P.READ_SUBSCRIPTION,
           "A subscription's metrics (AMS)", "Metrics", tag=S),
    Method(P.SUBSCRIPTION, "POST", "seek", seek, P.CONSUME, "Seek to a time or a snapshot", body="SeekRequest", tag=S),
    Method(P.SUBSCRIPTION, "GET", "seekStatus", seek_status, P.READ_SUBSCRIPTION,
           "The latest seek and its progress ({} before any; Metro's)", "SeekStatus", tag=S),
    Method(P.PROJECT, "GET", "metrics", project_metrics, P.PROJECT_ADMIN, "A project's metrics", "Metrics"),
    *acl_methods(P.TOPIC, "topic", P.TOPIC_ADMIN, P.TOPIC_MEMBER),
    *acl_methods(P.SUBSCRIPTION, "subscription", P.SUBSCRIPTION_ADMIN, P.SUBSCRIPTION_MEMBER),
)
