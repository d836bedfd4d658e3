"""Topics, subscriptions and snapshots in Google's JSON shape, validated on the way in.

Field names are snake_case in Python and camelCase on the wire; both spellings are accepted,
as protobuf JSON parsers accept them. Unknown fields are refused with INVALID_ARGUMENT. Booleans are JSON
true and false only, as in proto3's JSON mapping (``StrictBool``). The one boolean read elsewhere, pull's
``returnImmediately`` (core/wire/fields.bool_field), also takes the strings "true" and "false": the AMS dialect
shares that request, and argo-ams-library sends them.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import Field, StrictBool, StrictInt, ValidationError, field_validator

from chalicelib.core import limits
from chalicelib.core.access.references import (
    ATTACH_TO_TOPIC,
    CONSUME_SUBSCRIPTION,
    OUTPUT_ONLY,
    PUBLISH_TO_TOPIC,
    PUSH_IDENTITY,
    READ_SCHEMA,
    URL_NAME,
)
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.timefmt import format_duration, parse_duration
from chalicelib.core.wire.base import Wire
from chalicelib.core.wire.export import CloudStorageConfig
from chalicelib.core.wire.ingestion import IngestionDataSourceSettings
from chalicelib.core.wire.transforms import MessageTransform

__all__ = ["Wire"]  # re-exported: the base of every model (core/wire/base.py)


W = TypeVar("W", bound=Wire)


def parse_model(cls: type[W], body: Any, what: str) -> W:
    """Validate ``body`` into ``cls`` or raise INVALID_ARGUMENT naming the first bad field."""
    if not isinstance(body, dict):
        raise InvalidArgument(f"Invalid JSON payload received: {what} must be a JSON object")
    try:
        return cls.model_validate(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or what
        if err["type"] == "extra_forbidden":
            raise InvalidArgument(f'Invalid JSON payload received. Unknown name "{loc}": Cannot find field.') from None
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise InvalidArgument(f"Invalid value at '{loc}': {msg}") from None


def _labels(value: dict[str, str]) -> dict[str, str]:
    if len(value) > limits.MAX_LABELS:
        raise ValueError(f"at most {limits.MAX_LABELS} labels are allowed")
    return value


def _duration(value: str | None, field: str, low: float, high: float) -> str | None:
    if value is None:
        return None
    seconds = parse_duration(value, field)
    if not low <= seconds <= high:
        raise ValueError(f"{field} must be between {format_duration(low)} and {format_duration(high)}")
    return format_duration(seconds)


class SchemaSettings(Wire):
    schema_: Annotated[str, READ_SCHEMA] = Field(default="", alias="schema")
    encoding: str | StrictInt | None = None  # a name or its number; never a boolean read as 1
    first_revision_id: str = ""
    last_revision_id: str = ""


class Topic(Wire):
    name: Annotated[str, URL_NAME] = ""
    labels: dict[str, str] = Field(default_factory=dict)
    message_storage_policy: dict[str, Any] | None = None
    kms_key_name: str = ""
    schema_settings: SchemaSettings | None = None
    satisfies_pzs: StrictBool = False
    message_retention_duration: str | None = None
    state: str | int | None = None
    ingestion_data_source_settings: IngestionDataSourceSettings | None = None
    message_transforms: list[MessageTransform] = Field(default_factory=list)

    _check_labels = field_validator("labels")(_labels)

    @field_validator("message_retention_duration")
    @classmethod
    def _retention(cls, v: str | None) -> str | None:
        return _duration(v, "message_retention_duration", limits.RETENTION_MIN, limits.RETENTION_MAX)


class OidcToken(Wire):
    service_account_email: Annotated[str, PUSH_IDENTITY] = ""
    audience: str = ""


class NoWrapper(Wire):
    write_metadata: StrictBool = False


class PushConfig(Wire):
    push_endpoint: str = ""
    attributes: dict[str, str] = Field(default_factory=dict)
    oidc_token: OidcToken | None = None
    pubsub_wrapper: dict[str, Any] | None = None
    no_wrapper: NoWrapper | None = None


class DeadLetterPolicy(Wire):
    dead_letter_topic: Annotated[str, PUBLISH_TO_TOPIC] = ""
    max_delivery_attempts: int = 0

    @field_validator("max_delivery_attempts")
    @classmethod
    def _attempts(cls, v: int) -> int:
        if v and not limits.DEAD_LETTER_MIN_ATTEMPTS <= v <= limits.DEAD_LETTER_MAX_ATTEMPTS:
            raise ValueError("max_delivery_attempts must be between 5 and 100")
        return v


class RetryPolicy(Wire):
    minimum_backoff: str | None = None
    maximum_backoff: str | None = None

    @field_validator("minimum_backoff", "maximum_backoff")
    @classmethod
    def _backoff(cls, v: str | None) -> str | None:
        return _duration(v, "backoff", 0, limits.RETRY_BACKOFF_MAX)


class ExpirationPolicy(Wire):
    ttl: str | None = None

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, v: str | None) -> str | None:
        return _duration(v, "expiration_policy.ttl", 24 * 3600, 10**10)


class AmsPush(Wire):
    """The ARGO Messaging Service's push settings of a subscription, kept beside its Google push config
    (core/wire/ams.py reads and renders them; Google's dialect neither takes nor shows them)."""

    max_messages: int = 1
    retry_type: str = "linear"
    retry_period_ms: int = 3000
    authorization_type: str = "disabled"
    authorization_value: str = ""
    verification_hash: str = ""
    verified: StrictBool = False


class Subscription(Wire):
    name: Annotated[str, URL_NAME] = ""
    topic: Annotated[str, ATTACH_TO_TOPIC] = ""
    push_config: PushConfig | None = None
    bigquery_config: dict[str, Any] | None = None
    cloud_storage_config: CloudStorageConfig | None = None
    ack_deadline_seconds: int = 0
    retain_acked_messages: StrictBool = False
    message_retention_duration: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    enable_message_ordering: StrictBool = False
    expiration_policy: ExpirationPolicy | None = None
    filter: str = ""
    dead_letter_policy: DeadLetterPolicy | None = None
    retry_policy: RetryPolicy | None = None
    detached: StrictBool = False
    enable_exactly_once_delivery: StrictBool = False
    topic_message_retention_duration: str | None = None
    state: str | int | None = None
    message_transforms: list[MessageTransform] = Field(default_factory=list)
    ams_push: AmsPush | None = None
    ams_offset_ms: int = 0  # where AMS's :modifyOffset last moved the subscription (core/replay/offsets.py)

    _check_labels = field_validator("labels")(_labels)

    @field_validator("ack_deadline_seconds")
    @classmethod
    def _deadline(cls, v: int) -> int:
        if v and not limits.ACK_DEADLINE_MIN <= v <= limits.ACK_DEADLINE_MAX:
            raise ValueError("ack_deadline_seconds must be between 10 and 600")
        return v

    @field_validator("message_retention_duration")
    @classmethod
    def _retention(cls, v: str | None) -> str | None:
        return _duration(v, "message_retention_duration", limits.RETENTION_MIN, limits.RETENTION_MAX)

    @field_validator("bigquery_config")
    @classmethod
    def _unsupported(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v:
            raise ValueError("BigQuery subscriptions are not supported by Metro: export to S3 with cloudStorageConfig "
                             "(Avro or text files a Glue table or Athena can read), docs/decisions/bigquery-export.md")
        return None

    # Derived values with Google's defaults filled in.
    @property
    def ack_deadline(self) -> int:
        return self.ack_deadline_seconds or limits.ACK_DEADLINE_DEFAULT

    @property
    def retention_seconds(self) -> float:
        if self.message_retention_duration is None:
            return float(limits.RETENTION_DEFAULT)
        return parse_duration(self.message_retention_duration, "message_retention_duration")

    @property
    def is_push(self) -> bool:
        return bool(self.push_config and self.push_config.push_endpoint)

    def reported(self) -> Subscription:
        """The subscription as Google reports it: output-only fields and defaults filled in."""
        retention = self.message_retention_duration
        expiration = self.expiration_policy
        export = self.cloud_storage_config
        if export is not None and not export.state:  # an export subscription is ACTIVE until its writer finds out
            export = export.model_copy(update={"state": "ACTIVE"})
        return self.model_copy(update={
            "cloud_storage_config": export,
            "push_config": PushConfig() if self.push_config is None else self.push_config,
            "ack_deadline_seconds": self.ack_deadline,
            "message_retention_duration": f"{limits.RETENTION_DEFAULT}s" if retention is None else retention,
            "expiration_policy": ExpirationPolicy(ttl=f"{limits.EXPIRATION_DEFAULT}s") if expiration is None
            else expiration,
            "state": "ACTIVE",
            "ams_push": None,
            "ams_offset_ms": 0,
        })


class Snapshot(Wire):
    name: Annotated[str, URL_NAME] = ""
    topic: Annotated[str, OUTPUT_ONLY] = ""
    expire_time: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    _check_labels = field_validator("labels")(_labels)


class CreateSnapshotBody(Wire):
    subscription: Annotated[str, CONSUME_SUBSCRIPTION] = ""
    labels: dict[str, str] = Field(default_factory=dict)
    tags: dict[str, str] = Field(default_factory=dict)

    _check_labels = field_validator("labels")(_labels)


def mask_paths(mask: object, allowed: dict[str, str], what: str) -> list[str]:
    """Field names (snake_case) named by an update mask given as protobuf JSON (comma separated).

    ``allowed`` maps each updatable snake_case path to its Python field name.
    """
    if isinstance(mask, dict):  # a FieldMask object {"paths": [...]} is also accepted
        paths = mask.get("paths", [])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise InvalidArgument(f"Invalid value at 'update_mask.paths' in the {what}: must be a list of strings.")
        mask = ",".join(paths)
    if not isinstance(mask, str) or not mask.strip():
        raise InvalidArgument(f"The update_mask in the {what} must be set, and must contain a non-empty paths list.")
    fields = []
    for raw in mask.split(","):
        path = _snake(raw.strip())
        top = path.split(".")[0]
        if top not in allowed:
            raise InvalidArgument(f"Invalid update_mask provided in the {what}: {raw.strip()} cannot be updated.")
        fields.append(allowed[top])
    return fields


def _snake(path: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in path)
