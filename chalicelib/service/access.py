"""Authentication and authorization: who a token is, and whether that principal may do an action.

``METRO_AUTH=open``: every request acts as service_admin and no store is read. ``keys``: a token is
resolved to its user through a keyed hash (core/access/identity.TokenHasher); ``METRO_ADMIN_KEY`` is the
bootstrap service admin. The principal of a token hash and the ACL of a resource are cached for
``METRO_AUTH_CACHE_SECONDS`` (at most 60), so a warm process adds no DynamoDB read per request; a refresh,
a deletion or an ACL change made through this process is seen at once, through another within the bound.
A token that resolves to no user is remembered as unknown for a few seconds (bounded in number), so
repeating it costs no read either.
It also serves the ACL views: AMS's ``:acl`` / ``:modifyAcl`` and Google's IAM policy methods.
"""

from __future__ import annotations

from chalicelib.core.access.accounts import ACL_ROLE, AuthorizedUsers, Permissions, Policy, policy_etag
from chalicelib.core.access.identity import (
    IAM_PERMISSIONS,
    MAX_TOKEN_CHARS,
    OPEN_PRINCIPAL,
    SERVICE_ROLES,
    Action,
    Principal,
    TokenHasher,
    allowed,
    needs_acl,
    same_secret,
)
from chalicelib.core.errors import Aborted, NotFound, PermissionDenied, Unauthenticated
from chalicelib.core.names import Name
from chalicelib.core.ttlcache import TtlCache
from chalicelib.core.wire.requests import AclRequest, PermissionsQuery
from chalicelib.service.context import Context

ADMIN_NAME = "service-admin"
_DENIED = "The caller does not have permission"
_UNAUTHENTICATED = ("Request is missing a valid API key or token (x-api-key header, key query parameter or "
                    "Authorization: Bearer).")


# Unknown tokens are remembered briefly (never longer than a principal, METRO_AUTH_CACHE_SECONDS) and in a
# bounded number, the least recently seen leaving first.
UNKNOWN_TOKEN_SECONDS = 5.0
UNKNOWN_TOKEN_ENTRIES = 4096


class AccessService:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.open = ctx.config.auth_mode != "keys"
        ttl = ctx.config.auth_cache_seconds
        self._principals: TtlCache[str, Principal] = TtlCache(ttl)
        self._acls: TtlCache[str, frozenset[str]] = TtlCache(ttl)
        # Hashes of tokens that resolved to no user: a repeated unknown token costs one read per interval.
        self._unknown: TtlCache[str, bool] = TtlCache(min(UNKNOWN_TOKEN_SECONDS, ttl), UNKNOWN_TOKEN_ENTRIES)
        self.hasher = TokenHasher(ctx.config.ack_secret)

    # -- who ------------------------------------------------------------------------------------------
    def authenticate(self, token: str) -> Principal:
        """The principal a request acts as; UNAUTHENTICATED for a missing, unknown or revoked token."""
        if self.open:
            return OPEN_PRINCIPAL
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise Unauthenticated(_UNAUTHENTICATED)
        if same_secret(token, self.ctx.config.admin_key):
            return Principal(ADMIN_NAME, "", SERVICE_ROLES)
        token_hash = self.hasher.hash(token)
        now = self.ctx.clock()
        principal = self._principals.get(token_hash, now)
        if principal is None:
            if self._unknown.get(token_hash, now):
                raise Unauthenticated(_UNAUTHENTICATED)
            user = self.ctx.identity.user_for_token(token_hash)
            if user is None:
                self._unknown.put(token_hash, True, now)
                raise Unauthenticated(_UNAUTHENTICATED)
            principal = user.principal()
            self._principals.put(token_hash, principal, now)
        return principal

    def issued(self, token: str) -> str:
        """The hash under which a token this process just issued is stored; a token presented before it was
        issued is no longer remembered as unknown."""
        token_hash = self.hasher.hash(token)
        self.forget_token(token_hash)
        return token_hash

    def forget_token(self, token_hash: str) -> None:
        """Drop what this process remembers of a token hash: its principal, or that it was unknown."""
        self._principals.drop(token_hash)
        self._unknown.drop(token_hash)

    # -- may they -------------------------------------------------------------------------------------
    def authorize(self, principal: Principal, action: Action, project: str, resource: Name | None) -> None:
        """PERMISSION_DENIED unless ``principal`` may do ``action``; decided before the resource is looked
        at, so a caller without access to a project learns nothing about what exists in it."""
        acl = self.acl(resource) if resource is not None and needs_acl(principal, action, project) else frozenset()
        if not allowed(principal, action, project, acl):
            raise PermissionDenied(_DENIED)

    def acl(self, name: Name) -> frozenset[str]:
        """The uuids on a resource's ACL (empty for a resource that does not exist), cached."""
        now = self.ctx.clock()
        users = self._acls.get(name.path, now)
        if users is None:
            users = self.ctx.resources.acl(name) or frozenset()
            self._acls.put(name.path, users, now)
        return users

    # -- the ACL views --------------------------------------------------------------------------------
    def authorized_users(self, name: Name) -> AuthorizedUsers:
        """AMS's ``:acl``: the names of the users on the ACL (users deleted since are left out)."""
        uuids = self.ctx.resources.acl(name)
        if uuids is None:
            raise NotFound(f"{name.collection[:-1].capitalize()} doesn't exist")
        return AuthorizedUsers(tuple(sorted(u.name for u in self.ctx.identity.list_users() if u.uuid in uuids)))

    def modify_acl(self, name: Name, request: AclRequest) -> AuthorizedUsers:
        """AMS's ``:modifyAcl`` (and setIamPolicy): every user must exist and be a member of the project."""
        if request.etag and request.etag != policy_etag(self.authorized_users(name).names):
            raise Aborted("The policy was changed concurrently (etag mismatch); read it again and retry.")
        users = {u.name: u for u in self.ctx.identity.list_users()}
        missing = [n for n in request.names if n not in users or not users[n].roles_in(name.project)]
        if missing:
            raise NotFound(f"User(s): {','.join(missing)} do not exist")
        self.ctx.resources.set_acl(name, tuple(users[n].uuid for n in request.names))
        self._acls.drop(name.path)
        return AuthorizedUsers(tuple(sorted(request.names)))

    def policy(self, name: Name) -> Policy:
        return Policy(ACL_ROLE[name.collection], self.authorized_users(name).names)

    def set_policy(self, name: Name, request: AclRequest) -> Policy:
        return Policy(ACL_ROLE[name.collection], self.modify_acl(name, request).names)

    def test_permissions(self, principal: Principal, name: Name, request: PermissionsQuery) -> Permissions:
        """Google's testIamPermissions: the asked permissions the caller holds on the resource."""
        known = IAM_PERMISSIONS[name.collection]
        acl = self.acl(name)
        held = tuple(p for p in request.permissions
                     if p in known and allowed(principal, known[p], name.project, acl))
        return Permissions(held)
