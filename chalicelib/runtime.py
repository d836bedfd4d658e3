"""Wiring: the use cases built once per warm Lambda (or per local server) from configuration."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from chalicelib import config
from chalicelib.service.access import AccessService
from chalicelib.service.accounts import AccountService
from chalicelib.service.admin import AdminService
from chalicelib.service.ams import AmsService
from chalicelib.service.context import Context
from chalicelib.service.health import HealthService
from chalicelib.service.offsets import OffsetService
from chalicelib.service.publish import PublishService
from chalicelib.service.pull import PullService
from chalicelib.service.schema_topics import TopicSchemas
from chalicelib.service.schemas import SchemaService
from chalicelib.service.seek import SeekService
from chalicelib.service.snapshots import SnapshotService
from chalicelib.service.usage import UsageService
from chalicelib.store.call_record import acting_as
from chalicelib.store.secrets import load_secrets

__all__ = ["Services", "acting_as", "check_secrets", "reset", "services", "with_stored_secrets"]

MIN_ADMIN_KEY_CHARS = 32


@dataclass(frozen=True)
class Services:
    ctx: Context
    admin: AdminService
    publish: PublishService
    pull: PullService
    usage: UsageService
    access: AccessService
    accounts: AccountService
    seek: SeekService
    snapshots: SnapshotService
    ams: AmsService
    offsets: OffsetService
    schemas: SchemaService
    topic_schemas: TopicSchemas
    health: HealthService

    @classmethod
    def build(cls, ctx: Context) -> Services:
        access, admin, seek = AccessService(ctx), AdminService(ctx), SeekService(ctx)
        schemas = SchemaService(ctx)
        topic_schemas = TopicSchemas(ctx, schemas.compiled)  # publish and validateMessage share compiled revisions
        return cls(ctx, admin, PublishService(ctx, topic_schemas), PullService(ctx), UsageService(ctx), access,
                   AccountService(ctx, access), seek, SnapshotService(ctx), AmsService(ctx, admin),
                   OffsetService(ctx, admin, seek), schemas, topic_schemas, HealthService(ctx))


def check_secrets(cfg: config.Config) -> None:
    """Refuse to start with an unknown auth mode, keys mode without a real admin key or on the built-in (or an
    empty) ack secret, a deployed Metro on the built-in local secret, or a deployed Metro in open mode."""
    if cfg.auth_mode not in ("open", "keys"):
        raise RuntimeError(f"METRO_AUTH must be 'open' or 'keys', not {cfg.auth_mode!r}")
    if cfg.auth_mode == "keys" and len(cfg.admin_key) < MIN_ADMIN_KEY_CHARS:
        raise RuntimeError(f"METRO_AUTH=keys needs METRO_ADMIN_KEY, the service admin's token "
                           f"(at least {MIN_ADMIN_KEY_CHARS} characters; e.g. python -c "
                           "'import secrets; print(secrets.token_urlsafe(32))')")
    if cfg.auth_mode == "keys" and cfg.ack_secret in (b"", config.LOCAL_ACK_SECRET.encode()):
        raise RuntimeError("METRO_AUTH=keys needs METRO_ACK_SECRET, a secret of its own: it keys the stored token "
                           "hashes, page tokens and ack ids, and the built-in local default is public (e.g. python "
                           "-c 'import secrets; print(secrets.token_urlsafe(32))')")
    if cfg.deployed and cfg.ack_secret == config.LOCAL_ACK_SECRET.encode():
        raise RuntimeError("METRO_ACK_SECRET must be set to a real secret when deployed (METRO_MODE=aws)")
    if cfg.deployed and cfg.auth_mode == "open":
        raise RuntimeError("METRO_AUTH=open is for the local stack only: deployed (METRO_MODE=aws), every caller "
                           "would be service_admin of every project. Deploy with METRO_AUTH=keys (the default).")


def with_stored_secrets(cfg: config.Config) -> config.Config:
    """Deployed with METRO_SECRETS_SSM_PATH: the secrets come from SSM Parameter Store, not the environment."""
    if not cfg.secrets_path:
        return cfg
    found = load_secrets(cfg)
    return dataclasses.replace(
        cfg,
        ack_secret=found["ack-secret"].encode() if "ack-secret" in found else cfg.ack_secret,
        admin_key=found.get("admin-key", cfg.admin_key),
        push_signing_key=found.get("push-signing-key", cfg.push_signing_key),
    )


@functools.lru_cache(maxsize=1)
def services() -> Services:
    cfg = with_stored_secrets(config.load())
    check_secrets(cfg)
    return Services.build(Context.from_config(cfg))


def reset() -> None:
    services.cache_clear()
