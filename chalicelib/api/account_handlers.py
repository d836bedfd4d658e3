"""Handlers of the identity routes (ARGO Messaging Service's projects, users and members API) and their
declarations (``METHODS``, api/methods.py); api/routes.py dispatches to them as to api/handlers.py.
"""

from __future__ import annotations

from collections.abc import Callable

from chalicelib.api import account_requests, declared
from chalicelib.api import permissions as P
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.methods import Method
from chalicelib.core import names
from chalicelib.core.wire.responses import EMPTY
from chalicelib.runtime import services

Member = tuple[str, str]  # (project, user name)
MemberHandler = Callable[[Member, Incoming], Result]


# -- projects -------------------------------------------------------------------------------------------
def list_projects(_: str, incoming: Incoming) -> Result:
    return services().accounts.list_projects()


def create_project(project: str, incoming: Incoming) -> Result:
    request = account_requests.project_request(incoming.body)
    return services().accounts.create_project(names.check_project(project), request, incoming.principal)


def get_project(project: str, incoming: Incoming) -> Result:
    return services().accounts.get_project(project)


def update_project(project: str, incoming: Incoming) -> Result:
    return services().accounts.update_project(project, account_requests.project_request(incoming.body))


def delete_project(project: str, incoming: Incoming) -> Result:
    services().accounts.delete_project(project)
    return EMPTY


def declare(_: str, incoming: Incoming) -> Result:
    """What METRO_INIT applies at start (docs/init.md), applied now: checked whole, then idempotently; the tokens
    generated for new users are in this answer only."""
    applied = declared.apply_declaration(declared.parse(incoming.body, "the declaration"), services())
    return {"applied": applied.lines, "notUpdated": applied.reported,
            "tokens": [{"user": user, "token": token} for user, token in applied.tokens]}


def push_identities(project: str, incoming: Incoming) -> Result:
    return services().accounts.push_identities(project)


def modify_push_identities(project: str, incoming: Incoming) -> Result:
    request = account_requests.push_identities_request(incoming.body)
    return services().accounts.set_push_identities(project, request)


# -- users ----------------------------------------------------------------------------------------------
def list_users(_: str, incoming: Incoming) -> Result:
    page = account_requests.user_page_request(incoming.params)
    return services().accounts.list_users(page, incoming.params.get("project", ""))


def profile(_: str, incoming: Incoming) -> Result:
    return services().accounts.profile(incoming.principal)


def create_user(name: str, incoming: Incoming) -> Result:
    request = account_requests.user_request(incoming.body)
    return services().accounts.create_user(account_requests.user_name(name), request, incoming.principal)


def get_user(name: str, incoming: Incoming) -> Result:
    return services().accounts.get_user(name)


def update_user(name: str, incoming: Incoming) -> Result:
    return services().accounts.update_user(name, account_requests.user_request(incoming.body))


def delete_user(name: str, incoming: Incoming) -> Result:
    services().accounts.delete_user(name)
    return EMPTY


def refresh_token(name: str, incoming: Incoming) -> Result:
    return services().accounts.refresh_token(name)


# -- project members ------------------------------------------------------------------------------------
def list_members(project: str, incoming: Incoming) -> Result:
    page = account_requests.user_page_request(incoming.params)
    return services().accounts.list_members(project, page, incoming.principal)


def get_member(member: Member, incoming: Incoming) -> Result:
    return services().accounts.get_member(*member, incoming.principal)


def create_member(member: Member, incoming: Incoming) -> Result:
    project, name = member
    request = account_requests.member_roles_request(incoming.body, project)
    return services().accounts.create_member(project, account_requests.user_name(name), request, incoming.principal)


def update_member(member: Member, incoming: Incoming) -> Result:
    request = account_requests.member_roles_request(incoming.body, member[0])
    return services().accounts.set_member_roles(*member, request, incoming.principal, must_be_member=True)


def add_member(member: Member, incoming: Incoming) -> Result:
    request = account_requests.member_roles_request(incoming.body, member[0])
    return services().accounts.set_member_roles(*member, request, incoming.principal, must_be_member=False)


def remove_member(member: Member, incoming: Incoming) -> Result:
    services().accounts.remove_member(*member)
    return EMPTY


# -- the methods -----------------------------------------------------------------------------------------
PAGE = ("pageSize", "pageToken")
METHODS: tuple[Method, ...] = (
    Method(P.PROJECTS, "GET", "", list_projects, P.SERVICE_ADMIN, "List projects", "AmsProjects"),
    Method(P.DECLARATION, "POST", "", declare, P.SERVICE_ADMIN,
           "Apply a declaration of projects, users, schemas, topics, subscriptions and ACLs (docs/init.md)",
           "Declared", body="Declaration"),
    Method(P.PROJECT, "POST", "", create_project, P.SERVICE_ADMIN, "Create a project", "AmsProject",
           body="ProjectRequest"),
    Method(P.PROJECT, "GET", "", get_project, P.PROJECT_ADMIN, "Get a project", "AmsProject"),
    Method(P.PROJECT, "PUT", "", update_project, P.SERVICE_ADMIN, "Update a project's description", "AmsProject",
           body="ProjectRequest"),
    Method(P.PROJECT, "DELETE", "", delete_project, P.SERVICE_ADMIN, "Delete a project and everything in it"),
    Method(P.PROJECT, "GET", "pushIdentities", push_identities, P.PROJECT_ADMIN,
           "Service accounts push subscriptions may sign as", "PushIdentities"),
    Method(P.PROJECT, "POST", "modifyPushIdentities", modify_push_identities, P.PROJECT_ADMIN,
           "Replace the project's push identities", "PushIdentities", body="PushIdentitiesRequest"),
    Method(P.MEMBERS, "GET", "", list_members, P.PROJECT_ADMIN, "List the project's members", "AmsUsers",
           query=PAGE),
    Method(P.MEMBER, "GET", "", get_member, P.PROJECT_ADMIN, "Get a project member", "AmsUser"),
    Method(P.MEMBER, "POST", "", create_member, P.PROJECT_ADMIN, "Create a user as a member of the project",
           "AmsUser", body="UserRequest"),
    Method(P.MEMBER, "PUT", "", update_member, P.PROJECT_ADMIN, "Change a member's roles in the project", "AmsUser",
           body="UserRequest"),
    Method(P.MEMBER, "POST", "add", add_member, P.PROJECT_ADMIN, "Add an existing user to the project", "AmsUser",
           body="MemberRolesRequest"),
    Method(P.MEMBER, "POST", "remove", remove_member, P.PROJECT_ADMIN, "Remove a user from the project",
           body="Empty"),
    Method(P.USERS, "GET", "", list_users, P.SERVICE_ADMIN, "List users", "AmsUsers",
           query=(*PAGE, "project")),
    Method(P.USER, "GET", account_requests.PROFILE, profile, P.AUTHENTICATED, "The caller's own user", "AmsUser",
           path="/v1/users/profile"),
    Method(P.USER, "POST", "", create_user, P.SERVICE_ADMIN, "Create a user (its token is in the answer)",
           "AmsUser", body="UserRequest"),
    Method(P.USER, "GET", "", get_user, P.SERVICE_ADMIN, "Get a user", "AmsUser"),
    Method(P.USER, "PUT", "", update_user, P.SERVICE_ADMIN, "Update a user", "AmsUser", body="UserRequest"),
    Method(P.USER, "DELETE", "", delete_user, P.SERVICE_ADMIN, "Delete a user"),
    Method(P.USER, "POST", "refreshToken", refresh_token, P.SERVICE_ADMIN,
           "Issue a new token for a user (the old one stops working)", "AmsUser", body="Empty"),
)
