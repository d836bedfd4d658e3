"""Export subscriptions (``cloudStorageConfig``): their checks at create and update, their side effects, and
their ``state`` (docs/export.md). The writer itself is delivery/export.py.

- :func:`validate`: Google's limits (core/export_files.py), no pushConfig beside it, a bucket the stage allows
  (``METRO_EXPORT_BUCKETS`` deployed; locally any bucket the emulator has), a ``serviceAccountEmail`` that
  ``METRO_EXPORT_ROLES`` maps to a role, and a bucket that exists and that the writer's role reaches: else
  FAILED_PRECONDITION. It returns the config as stored (textConfig when no format is named, state ACTIVE);
- :func:`sync` after create, update, seek and delete: the subscription stays findable by its queue (the push
  index, as a subscription that does not push) and, deployed, an event source mapping feeds its queue to the
  export function in batches of up to 10,000 records and a window of up to 300 s;
- :func:`record_state`: the writer's finding (NOT_FOUND, PERMISSION_DENIED, back to ACTIVE) on the
  subscription, so that Get shows it.
"""

from __future__ import annotations

import fnmatch
import logging

from chalicelib.config import Config
from chalicelib.core import export_files, names
from chalicelib.core.errors import Aborted, FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from chalicelib.core.records import SubscriptionRecord
from chalicelib.core.wire.export import CloudStorageConfig
from chalicelib.core.wire.models import Subscription
from chalicelib.service.context import Context
from chalicelib.store.mappings import Target
from chalicelib.store.push_state import queue_arn, queue_key

log = logging.getLogger(__name__)

EXPORT_TIMEOUT = 120  # seconds: the export function's timeout (.chalice/config.json)
EXPORT_CONCURRENCY = 2  # the mapping's MaximumConcurrency (its minimum): files, not throughput, are the point


def is_export(spec: Subscription | None) -> bool:
    return spec is not None and spec.cloud_storage_config is not None and not spec.detached


def bucket_allowed(config: Config, bucket: str) -> bool:
    """Deployed: only a bucket METRO_EXPORT_BUCKETS names (or matches). Locally an empty list allows any."""
    if not config.export_buckets:
        return not config.deployed
    return any(fnmatch.fnmatchcase(bucket, pattern) for pattern in config.export_buckets)


def role_of(config: Config, email: str) -> str:
    """The role ARN ``email`` maps to; "" for no email (Metro's own role). PERMISSION_DENIED when unmapped."""
    email = email.strip().lower()
    if not email:
        return ""
    for mapped, arn in config.export_roles:
        if mapped == email:
            return arn
    raise PermissionDenied(f"Service account {email} is not mapped to a role Metro may assume for exports "
                           "(METRO_EXPORT_ROLES, docs/export.md).")


def validate(ctx: Context, spec: Subscription, previous: Subscription | None = None) -> Subscription:
    """``spec`` with its cloudStorageConfig as stored, or INVALID_ARGUMENT / FAILED_PRECONDITION /
    PERMISSION_DENIED. An unchanged config is not checked again (its state is kept)."""
    cfg = spec.cloud_storage_config
    if cfg is None:
        return spec
    if spec.push_config is not None and spec.push_config.push_endpoint:
        raise InvalidArgument("Invalid subscription: only one of push_config, bigquery_config and "
                              "cloud_storage_config may be set.")
    old = previous.cloud_storage_config if previous is not None else None
    if old is not None and _same(old, cfg):
        return spec.model_copy(update={"cloud_storage_config": cfg.model_copy(update={"state": old.state})})
    s = export_files.settings(cfg)
    if not bucket_allowed(ctx.config, s.bucket):
        raise PermissionDenied(f"Bucket {s.bucket} is not one this service may export to (METRO_EXPORT_BUCKETS).")
    role = role_of(ctx.config, s.service_account)
    state = ctx.exports.check_bucket(s.bucket, role)
    if state == export_files.NOT_FOUND:
        raise FailedPrecondition(f"Bucket {s.bucket} does not exist.")
    if state == export_files.PERMISSION_DENIED:
        raise FailedPrecondition(f"The export role may not write to bucket {s.bucket}.")
    stored = export_files.normalized(cfg).model_copy(update={"state": export_files.ACTIVE})
    return spec.model_copy(update={"cloud_storage_config": stored})


def _same(a: CloudStorageConfig, b: CloudStorageConfig) -> bool:
    return export_files.normalized(a).model_copy(update={"state": None}) == \
        export_files.normalized(b).model_copy(update={"state": None})


def target(ctx: Context, cfg: CloudStorageConfig) -> Target:
    """The event source mapping of an export subscription: its batch and window from the config."""
    s = export_files.settings(cfg)
    return Target(ctx.config.export_function, export_files.batch_size(s), EXPORT_CONCURRENCY,
                  export_files.batching_window(s))


def sync(ctx: Context, old: SubscriptionRecord | None, new: SubscriptionRecord | None) -> None:
    """Keep an export subscription findable by its queue and, deployed, its queue mapped onto the export
    function with the config's batch and window. Called after push_config.sync."""
    old_export, new_export = is_export(old.spec if old else None), is_export(new.spec if new else None)
    if new is not None and new_export and not (old_export and old is not None and old.queue_url == new.queue_url):
        ctx.push.index_put(queue_key(new.queue_url), new.name, False)
    if not ctx.config.deployed:
        return  # the local export pump plays the mapping
    region, function = ctx.config.region, ctx.config.export_function
    same_queue = old is not None and new is not None and old.queue_url == new.queue_url
    if old is not None and old_export and not (new_export and same_queue):
        ctx.mappings.remove(queue_arn(old.queue_url, region), function)
    if new is not None and new_export:
        cfg = new.spec.cloud_storage_config
        assert cfg is not None
        t = target(ctx, cfg)
        # Lambda wants the queue's visibility timeout above the function's timeout (and the window it batches).
        ctx.queues.set_visibility_default(new.queue_url, max(new.spec.ack_deadline, EXPORT_TIMEOUT + t.window))
        ctx.mappings.ensure(queue_arn(new.queue_url, region), t)


def record_state(ctx: Context, rec: SubscriptionRecord, state: str) -> SubscriptionRecord:
    """Store the writer's finding on the subscription when it changed (one write per change, none otherwise)."""
    cfg = rec.spec.cloud_storage_config
    if cfg is None or (cfg.state or export_files.ACTIVE) == state:
        return rec
    new = rec.with_spec(rec.spec.model_copy(update={"cloud_storage_config": cfg.model_copy(update={"state": state})}))
    try:
        ctx.resources.put_subscription(names.parse(rec.name, "subscriptions"), new,
                                       old_topic=rec.spec.topic if rec.attached else None)
    except (NotFound, Aborted):  # deleted, or a seek swapped its queue: the next batch tries again
        log.info("export state of %s not recorded (it changed meanwhile)", rec.name)
        return rec
    log.warning("export subscription %s is now %s", rec.name, state)
    return new
