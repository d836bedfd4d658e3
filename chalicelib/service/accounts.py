"""Projects, users and project members (ARGO Messaging Service's users and projects API), and the service
accounts a project's push subscriptions may name. Tokens are made here and shown once (core/access/identity.py).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable

from chalicelib.core.access import push_identities
from chalicelib.core.access.accounts import (
    Project,
    ProjectList,
    ProjectRoles,
    PushIdentities,
    User,
    UserPage,
    UserView,
    service_admin_user,
)
from chalicelib.core.access.identity import Principal, new_token
from chalicelib.core.errors import InvalidArgument, NotFound, PermissionDenied
from chalicelib.core.wire.pagetokens import PageTokens
from chalicelib.core.wire.requests import PageRequest, ProjectRequest, PushIdentitiesRequest, RolesRequest, UserRequest
from chalicelib.service.access import AccessService
from chalicelib.service.context import Context

_USER_FIELDS = ("email", "first_name", "last_name", "organization", "description")


class AccountService:
    def __init__(self, ctx: Context, access: AccessService) -> None:
        self.ctx = ctx
        self.access = access
        self.store = ctx.identity
        self._pages = PageTokens(ctx.config.ack_secret)

    # -- projects -------------------------------------------------------------------------------------
    def create_project(self, name: str, request: ProjectRequest, principal: Principal) -> Project:
        now = self.ctx.clock()
        project = Project(name, request.description or "", now, now, principal.name)
        self.store.put_project(project, create=True)
        return project

    def get_project(self, name: str) -> Project:
        project = self.store.get_project(name)
        if project is None:
            if self.access.open:  # open mode: a project exists as soon as it is used
                return Project(name)
            raise NotFound("Project doesn't exist")
        return project

    def update_project(self, name: str, request: ProjectRequest) -> Project:
        project = self.get_project(name)
        changed = dataclasses.replace(project, modified_on=self.ctx.clock(),
                                      description=project.description if request.description is None
                                      else request.description)
        self.store.put_project(changed, create=False)
        return changed

    def delete_project(self, name: str) -> None:
        """The project goes, and every user's roles in it (its topics and subscriptions are not touched)."""
        self.store.delete_project(name)
        for user in self.store.list_users():
            if user.roles_in(name):
                self.store.put_user(user.with_roles(name, ()))

    def list_projects(self) -> ProjectList:
        return ProjectList(tuple(self.store.list_projects()))

    def push_identities(self, name: str) -> PushIdentities:
        return PushIdentities(self.get_project(name).push_identities)

    def set_push_identities(self, name: str, request: PushIdentitiesRequest) -> PushIdentities:
        if not self.access.open:  # keys mode: only service accounts this project owns
            foreign = [e for e in request.service_accounts
                       if not push_identities.owned_by(name, e, self.ctx.config.push_service_accounts)]
            if foreign:
                raise PermissionDenied(f"The caller does not have permission to act as service account {foreign[0]} "
                                       f"(a project's push identities are {{name}}@{name}"
                                       f"{push_identities.GOOGLE_SERVICE_ACCOUNT_DOMAIN} or assigned to it in "
                                       "METRO_PUSH_SERVICE_ACCOUNTS).")
        project = self.store.get_project(name)
        if project is None:
            raise NotFound("Project doesn't exist")
        self.store.put_project(dataclasses.replace(project, push_identities=request.service_accounts,
                                                   modified_on=self.ctx.clock()), create=False)
        return PushIdentities(request.service_accounts)

    # -- users ----------------------------------------------------------------------------------------
    def create_user(self, name: str, request: UserRequest, principal: Principal, token: str = "") -> UserView:
        """A new user with a new token (or ``token``, one declared at start: service/declared.py)."""
        now = self.ctx.clock()
        projects = request.projects or ()
        self._require_projects(p.project for p in projects)
        texts = {k: getattr(request, k) or "" for k in _USER_FIELDS}
        user = User(name=name, uuid=str(uuid.uuid4()), projects=projects, service_roles=request.service_roles or (),
                    created_on=now, modified_on=now, created_by=principal.name, **texts)
        token = token or new_token()
        self.store.create_user(user, self.access.issued(token))
        return UserView(user, token)

    def get_user(self, name: str) -> UserView:
        return self._detailed(self._user(name)[0])

    def update_user(self, name: str, request: UserRequest) -> UserView:
        user, token_hash = self._user(name)
        changes: dict[str, object] = {k: getattr(request, k) for k in (*_USER_FIELDS, "projects", "service_roles")
                                      if getattr(request, k) is not None}
        self._require_projects(p.project for p in request.projects or ())
        updated = dataclasses.replace(user, **changes, modified_on=self.ctx.clock())  # type: ignore[arg-type]
        self.store.put_user(updated)
        self.access.forget_token(token_hash)
        return UserView(updated)

    def delete_user(self, name: str) -> None:
        _, token_hash = self._user(name)
        self.store.delete_user(name, token_hash)
        self.access.forget_token(token_hash)

    def refresh_token(self, name: str, token: str = "") -> UserView:
        """A new token (or ``token``, one declared at start); the old one stops working at once here, within the
        cache bound elsewhere."""
        user, old_hash = self._user(name)
        token = token or new_token()
        user = dataclasses.replace(user, modified_on=self.ctx.clock())
        self.store.replace_token(user, old_hash, self.access.issued(token))
        self.access.forget_token(old_hash)
        return UserView(user, token)

    def list_users(self, page: PageRequest, project: str = "") -> UserPage:
        keep: Callable[[User], bool] = (lambda u: bool(u.roles_in(project))) if project else (lambda u: True)
        return self._page([u for u in self.store.list_users() if keep(u)], page, f"users\n{project}", True)

    def profile(self, principal: Principal) -> UserView:
        found = self.store.get_user(principal.name) if principal.uuid else None
        if found is None or found[0].uuid != principal.uuid:
            return UserView(service_admin_user(principal.name, self.ctx.clock()))
        return self._detailed(found[0])

    # -- project members ------------------------------------------------------------------------------
    def list_members(self, project: str, page: PageRequest, principal: Principal) -> UserPage:
        members = [u for u in self.store.list_users() if u.roles_in(project)]
        return self._page(members, page, f"members\n{project}", principal.is_service_admin,
                          "" if principal.is_service_admin else project)

    def get_member(self, project: str, name: str, principal: Principal) -> UserView:
        return self._detailed(self._member(project, name), privileged=principal.is_service_admin,
                              project="" if principal.is_service_admin else project)

    def create_member(self, project: str, name: str, request: RolesRequest, principal: Principal) -> UserView:
        """A new user whose only project is this one (a project admin's way to add users)."""
        self._require_projects([project])
        return self.create_user(name, UserRequest(projects=(ProjectRoles(project, request.roles),)), principal)

    def set_member_roles(self, project: str, name: str, request: RolesRequest, principal: Principal,
                         *, must_be_member: bool) -> UserView:
        """``:add`` (any existing user) or ``PUT`` (a member): the user's roles in this project."""
        if not request.roles:
            raise InvalidArgument("At least one role is needed; use :remove to take a user out of a project.")
        self._require_projects([project])
        user, token_hash = self._user(name)
        if must_be_member and not user.roles_in(project):
            raise NotFound("User doesn't exist")
        updated = dataclasses.replace(user.with_roles(project, request.roles), modified_on=self.ctx.clock())
        self.store.put_user(updated)
        self.access.forget_token(token_hash)
        return UserView(updated, privileged=principal.is_service_admin,
                        project="" if principal.is_service_admin else project)

    def remove_member(self, project: str, name: str) -> None:
        user = self._member(project, name)
        self.store.put_user(dataclasses.replace(user.with_roles(project, ()), modified_on=self.ctx.clock()))
        found = self.store.get_user(name)
        if found is not None:
            self.access.forget_token(found[1])

    # -- helpers --------------------------------------------------------------------------------------
    def _user(self, name: str) -> tuple[User, str]:
        found = self.store.get_user(name)
        if found is None:
            raise NotFound("User doesn't exist")
        return found

    def _member(self, project: str, name: str) -> User:
        found = self.store.get_user(name)
        if found is None or not found[0].roles_in(project):
            raise NotFound("User doesn't exist")
        return found[0]

    def _detailed(self, user: User, privileged: bool = True, project: str = "") -> UserView:
        """AMS's detailed view: per project (only ``project`` when set), the topics and subscriptions whose ACL
        lists the user."""
        held = {p.project: self.ctx.resources.acl_holdings(p.project, user.uuid) for p in user.projects
                if not project or p.project == project}
        return UserView(user, privileged=privileged, acl_entries=held, project=project)

    def _require_projects(self, projects: Iterable[str]) -> None:
        if self.access.open:
            return
        for project in projects:
            if self.store.get_project(project) is None:
                raise NotFound(f"Project {project} doesn't exist")

    def _page(self, users: list[User], page: PageRequest, scope: str, privileged: bool,
              project: str = "") -> UserPage:
        """AMS paging: ``pageSize`` 0 is everything; the token is the last name of the previous page."""
        users.sort(key=lambda u: u.name)
        position = self._pages.decode(scope, page.token)
        after = position.get("name", "") if position else ""
        rest = [u for u in users if u.name > after]
        size = page.size or len(rest)
        shown = rest[:size]
        token = self._pages.encode(scope, {"name": shown[-1].name}) if len(rest) > size and shown else ""
        return UserPage(tuple(UserView(u, privileged=privileged, project=project) for u in shown), token, len(users))
