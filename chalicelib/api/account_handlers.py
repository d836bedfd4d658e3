"""Handlers of the identity routes (ARGO Messaging Service's projects, users and members API) and their
(HTTP method, verb) tables; api/routes.py dispatches to them as to api/handlers.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from chalicelib.api import account_requests
from chalicelib.api.handlers import CollectionHandler, Incoming, Result, project_metrics
from chalicelib.core import names
from chalicelib.core.responses import EMPTY
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


# -- route tables ---------------------------------------------------------------------------------------
PROJECTS: Mapping[tuple[str, str], CollectionHandler] = {("GET", ""): list_projects}
PROJECT: Mapping[tuple[str, str], CollectionHandler] = {
    ("POST", ""): create_project,
    ("GET", ""): get_project,
    ("PUT", ""): update_project,
    ("DELETE", ""): delete_project,
    ("GET", "metrics"): project_metrics,
    ("GET", "pushIdentities"): push_identities,
    ("POST", "modifyPushIdentities"): modify_push_identities,
}
MEMBERS: Mapping[tuple[str, str], CollectionHandler] = {("GET", ""): list_members}
MEMBER: Mapping[tuple[str, str], MemberHandler] = {
    ("GET", ""): get_member,
    ("POST", ""): create_member,
    ("PUT", ""): update_member,
    ("POST", "add"): add_member,
    ("POST", "remove"): remove_member,
}
USERS: Mapping[tuple[str, str], CollectionHandler] = {("GET", ""): list_users}
USER: Mapping[tuple[str, str], CollectionHandler] = {
    ("GET", "profile"): profile,
    ("POST", ""): create_user,
    ("GET", ""): get_user,
    ("PUT", ""): update_user,
    ("DELETE", ""): delete_user,
    ("POST", "refreshToken"): refresh_token,
}
