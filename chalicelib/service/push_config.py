"""Push configuration: validation, the side effects of a push config change, and the push token signer.

Hooks called by the admin use cases (service/admin.py, which also owns ``:modifyPushConfig``):

- :func:`validate` on create and update: the endpoint must pass core/access/endpoints.py (https and a
  public address under the strict rules, ``METRO_PUSH_ALLOW_LIST`` lifting the address rule; never
  one of Metro's own ports or its AWS emulator's), an
  ``oidcToken`` needs a service account email and a signing key (and, with ``METRO_AUTH=keys``, one
  the project registered as a push identity), and only one wrapper may be set;
- :func:`sync` after create, update and delete: keeps the push index item (how the push handler
  and the local push pump find push subscriptions) and, when deployed, the Lambda event source
  mapping of the subscription's queue in line with the subscription;
- :func:`settle_ams_push` on every update: a subscription with AMS's push settings whose endpoint changes,
  through either dialect and any route, loses its verification and gets a new verification hash and
  authorization value (core/wire/ams.settled_push).

It also owns the push token signer (core/access/oidc.TokenSigner) shared by delivery and the JWKS route,
the tokens' cache, and the delivery-time endpoint check. It imports no other service module.
"""

from __future__ import annotations

import functools
import logging

from chalicelib.config import Config
from chalicelib.core import names
from chalicelib.core.access import push_identities
from chalicelib.core.access.endpoints import validate_push_endpoint
from chalicelib.core.access.oidc import DEFAULT_LIFETIME, TokenSigner, generate_signing_key
from chalicelib.core.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.ttlcache import TtlCache
from chalicelib.core.wire import ams
from chalicelib.core.wire.models import Subscription
from chalicelib.service.context import Context
from chalicelib.store.push_state import queue_arn, queue_key
from chalicelib.store.resolver import EndpointResolver, reserved, strict_rules

log = logging.getLogger(__name__)


# -- token signing ----------------------------------------------------------------------------------
@functools.cache
def _process_key() -> str:
    """Local mode without METRO_PUSH_SIGNING_KEY: one key per process (tokens die with the process)."""
    log.info("generated a push token signing key for this process (set METRO_PUSH_SIGNING_KEY to keep one)")
    return generate_signing_key()


@functools.lru_cache(maxsize=4)
def _signer(pem: str, issuer: str) -> TokenSigner:
    return TokenSigner(pem, issuer.rstrip("/"))


def token_signer(config: Config) -> TokenSigner | None:
    """The signer of push tokens, or None when deployed without a key."""
    pem = config.push_signing_key
    if not pem:
        if config.deployed:
            return None
        pem = _process_key()
    return _signer(pem, config.public_url)


# (key id, email, audience) -> token, reused until 5 minutes before it expires; bounded like every cache here.
_TOKENS: TtlCache[tuple[str, str, str], str] = TtlCache(DEFAULT_LIFETIME - 300, max_items=1024)


def service_account_allowed(config: Config, project: str, email: str) -> bool:
    """Whether push tokens of ``project``'s subscriptions may assert ``email``. In keys mode: only an account
    the project owns (core/access/push_identities.py). In open mode: listed in METRO_PUSH_SERVICE_ACCOUNTS (plain,
    or for this project), or any email when that list is empty without the strict rules (as Google's emulator)."""
    if config.auth_mode == "keys":
        return push_identities.owned_by(project, email, config.push_service_accounts)
    if not config.push_service_accounts:
        return not strict_rules(config)
    return push_identities.listed_for(project, email, config.push_service_accounts)


def push_token(config: Config, project: str, email: str, audience: str, now: float) -> str | None:
    """A token for one push of a ``project``'s subscription (reused until 5 minutes before it expires); None
    without a signing key or for a service account Metro may not act as for that project."""
    if not service_account_allowed(config, project, email):
        log.error("push with oidcToken for %r, which is not an allowed service account: nacked", email)
        return None
    signer = token_signer(config)
    if signer is None:
        log.error("push with oidcToken but no signing key (METRO_PUSH_SIGNING_KEY): nacked")
        return None
    key = (signer.key_id, email, audience)
    cached = _TOKENS.get(key, now)
    if cached is not None:
        return cached
    token = signer.sign(email, audience, now, lifetime=DEFAULT_LIFETIME)
    _TOKENS.put(key, token, now)
    return token


def endpoint_allowed(resolver: EndpointResolver, url: str) -> bool:
    """The endpoint check again at delivery time (DNS answers change; a passed check is kept a minute,
    chalicelib/store/resolver.py), never one of Metro's own ports; delivery connects only to the addresses
    it checked."""
    try:
        resolver.checked(url)
    except InvalidArgument as err:
        log.warning("not pushing: %s", err.message)
        return False
    return True


# -- validation --------------------------------------------------------------------------------------
def validate(ctx: Context, spec: Subscription, previous: Subscription | None = None) -> None:
    """Raise INVALID_ARGUMENT (or FAILED_PRECONDITION) for a push config Metro cannot deliver to.

    An unchanged push config is not checked again (a patch of other fields must not fail because
    an endpoint's DNS answer changed; delivery checks the endpoint again anyway).
    """
    pc = spec.push_config
    if pc is None or (previous is not None and previous.push_config == pc):
        return
    if pc.no_wrapper is not None and pc.pubsub_wrapper is not None:
        raise InvalidArgument("Invalid push_config: only one of pubsub_wrapper and no_wrapper may be set.")
    if not pc.push_endpoint:
        return
    config = ctx.config
    validate_push_endpoint(pc.push_endpoint, deployed=strict_rules(config), allow_list=config.push_allow_list,
                           resolve=ctx.resolver.resolver(), reserved=reserved(config))
    if pc.oidc_token is not None:
        email = pc.oidc_token.service_account_email
        if not email or "@" not in email:
            raise InvalidArgument("Invalid push_config.oidc_token: service_account_email must be an email address.")
        if token_signer(config) is None:
            raise FailedPrecondition("Authenticated push is not configured: METRO_PUSH_SIGNING_KEY is not set.")
        if not service_account_allowed(config, names.parse(spec.name, "subscriptions").project, email):
            raise PermissionDenied(f"The caller does not have permission to act as service account {email} "
                                   "(iam.serviceAccounts.actAs); see METRO_PUSH_SERVICE_ACCOUNTS.")
        if config.auth_mode == "keys" and not registered_identity(ctx, spec.name, email):
            raise PermissionDenied(f"Service account {email} is not a push identity of this project "
                                   "(a project_admin registers it with :modifyPushIdentities).")


def registered_identity(ctx: Context, subscription: str, email: str) -> bool:
    """Whether the subscription's project registered ``email`` as a push identity (keys mode)."""
    project = ctx.identity.get_project(names.parse(subscription, "subscriptions").project)
    return project is not None and email.strip().lower() in project.push_identities


# -- side effects -------------------------------------------------------------------------------------
def _is_push(rec: SubscriptionRecord | None) -> bool:
    return rec is not None and rec.spec.is_push and not rec.spec.detached


def sync(ctx: Context, old: SubscriptionRecord | None, new: SubscriptionRecord | None) -> None:
    """Bring the push index (and, when deployed, the event source mapping) in line with ``new``.

    ``old`` is the record before the change (None on create), ``new`` the record after it (None on
    delete). Called before the queue is deleted, so a mapping never outlives its queue's owner.
    """
    push = ctx.push
    old_push, new_push = _is_push(old), _is_push(new)
    same_queue = old is not None and new is not None and old.queue_url == new.queue_url
    if new is not None and (new_push or old_push):  # a pull subscription that pushed stays findable
        push.index_put(queue_key(new.queue_url), new.name, new_push)
    if new is None and old is not None:  # deleted: forget it (it may have pushed at some time)
        push.forget(queue_key(old.queue_url), old.name)
    if not ctx.config.deployed:
        return  # never event source mappings in the emulator: the local push pump plays Lambda
    mappings = ctx.mappings
    region = ctx.config.region
    if old is not None and old_push and not (new_push and same_queue):
        mappings.remove(queue_arn(old.queue_url, region))
    if new is not None and new_push and not (old_push and same_queue):
        mappings.ensure(queue_arn(new.queue_url, region))


# -- AMS's endpoint verification ---------------------------------------------------------------------
def _endpoint(spec: Subscription) -> str:
    return spec.push_config.push_endpoint if spec.push_config is not None else ""


def settle_ams_push(ctx: Context, old: Subscription, new: Subscription) -> Subscription:
    """``new`` (an update of ``old``) with AMS's push settings as they may be stored: a changed endpoint is
    unverified, with a new verification hash and authorization value, whichever dialect or route changed it
    (Google's ``:modifyPushConfig`` and PATCH keep AMS's settings as they were); ABORTED for a verification
    that raced with a change. A subscription without AMS's settings is returned as it is."""
    if new.ams_push is None:
        return new
    push = ams.settled_push(old.ams_push, new.ams_push, _endpoint(old) != _endpoint(new), ctx.ids.secret)
    return new if push is new.ams_push else new.model_copy(update={"ams_push": push})
