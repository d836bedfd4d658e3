"""Probes of the stores ``/v1/status`` reports on: one cheap read each, on clients that try once and give up
within seconds (aws.quick_client).

- the resources, messages and leases tables: a GetItem of a key no item has (an empty answer is health);
- the bucket: a GetObject of a key never written under ``raw/``. With ``s3:ListBucket`` on that prefix (the API's
  role has it) S3 answers NoSuchKey, without it AccessDenied; either proves that S3 took Metro's credentials and
  the bucket exists; NoSuchBucket, refused credentials and no answer do not;
- SQS: a GetQueueUrl of a queue name no subscription gets (QueueDoesNotExist is health).

A failed probe is logged at error level with the AWS operation and error code (never a message, which may
name the account), and reported by its name only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.errors import code_of

log = logging.getLogger(__name__)

_ABSENT = "health#probe"  # no item, object or queue is ever written under this name
_MISSING_OBJECT = ("NoSuchKey", "404", "AccessDenied", "403")
_MISSING_QUEUE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


class StoreProbes:
    def __init__(self, config: Config) -> None:
        self._config = config
        self._ddb = aws.quick_client("dynamodb", config)
        self._s3 = aws.quick_client("s3", config)
        self._sqs = aws.quick_client("sqs", config)
        tables = {"resources table": (config.resources_table, ("pk", "sk")),
                  "messages table": (config.messages_table, ("topic", "rid")),
                  "leases table": (config.leases_table, ("sub", "lease"))}
        self._probes: dict[str, tuple[str, Callable[[], Any], tuple[str, ...]]] = {
            name: ("GetItem", self._get_item(table, keys), ()) for name, (table, keys) in tables.items()}
        self._probes["bucket"] = ("GetObject", lambda: self._s3.get_object(
            Bucket=config.bucket, Key=f"raw/{_ABSENT}"), _MISSING_OBJECT)
        self._probes["queues"] = ("GetQueueUrl", lambda: self._sqs.get_queue_url(
            QueueName=f"{config.queue_prefix[:24]}-health-probe"), _MISSING_QUEUE)

    def _get_item(self, table: str, keys: tuple[str, str]) -> Callable[[], Any]:
        key = {name: {"S": _ABSENT} for name in keys}
        return lambda: self._ddb.get_item(TableName=table, Key=key)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._probes)

    def probe(self, name: str) -> bool:
        """Whether the store answers as it should; False (and one error-level log line) when it does not."""
        operation, read, expected = self._probes[name]
        try:
            read()
        except ClientError as exc:
            if code_of(exc) in expected:
                return True
            log.error("status: the %s failed its probe: %s answered %s", name, operation, code_of(exc) or "?")
            return False
        except BotoCoreError as exc:
            log.error("status: the %s failed its probe: %s raised %s", name, operation, type(exc).__name__)
            return False
        return True
