"""What every use case needs: configuration, stores, an injected clock and id source."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chalicelib.config import Config
from chalicelib.core.ackids import AckIdCodec
from chalicelib.core.ids import IdSource
from chalicelib.store.leases import LeaseStore
from chalicelib.store.log import MessageLog
from chalicelib.store.queues import QueueStore
from chalicelib.store.resources import ResourceStore

Clock = Callable[[], float]


@dataclass
class Context:
    config: Config
    resources: ResourceStore
    log: MessageLog
    queues: QueueStore
    leases: LeaseStore
    clock: Clock = time.time
    ids: IdSource = field(default_factory=IdSource)

    @property
    def ack_ids(self) -> AckIdCodec:
        return AckIdCodec(self.config.ack_secret)

    @classmethod
    def from_config(cls, config: Config, clock: Clock = time.time, ids: IdSource | None = None) -> Context:
        return cls(config, ResourceStore(config), MessageLog(config), QueueStore(config), LeaseStore(config),
                   clock, ids or IdSource())
