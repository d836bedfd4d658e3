"""What every use case needs: configuration, every store, an injected clock and id source.

Services and handlers never build a store themselves: they reach AWS only through the stores held
here, so a test swaps any of them for a fake by building a Context (or ``dataclasses.replace``).
The context owns the one thread pool of its stores (``workers``, created on first use) and hands it
to the stores that run calls concurrently.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chalicelib.config import Config
from chalicelib.core import transforms
from chalicelib.core.ids import IdSource
from chalicelib.core.queueing.ackids import AckIdCodec
from chalicelib.store.counters import CounterStore
from chalicelib.store.deadletter import LastAttemptStore
from chalicelib.store.exports import ExportStore
from chalicelib.store.fanout_slices import SliceStore
from chalicelib.store.health import StoreProbes
from chalicelib.store.history import TopicHistory
from chalicelib.store.identity import IdentityStore
from chalicelib.store.ingestion import IngestionStore
from chalicelib.store.invoker import AsyncInvoker
from chalicelib.store.leases import ExactLeases, SkipStore
from chalicelib.store.log import MessageLog
from chalicelib.store.log_bounds import LogBounds
from chalicelib.store.mappings import MappingStore
from chalicelib.store.pack_states import PackStates
from chalicelib.store.push_state import PushStore
from chalicelib.store.queue_age import QueueAge
from chalicelib.store.queues import QueueStore
from chalicelib.store.resolver import EndpointResolver
from chalicelib.store.resources import ResourceStore
from chalicelib.store.schemas import SchemaStore
from chalicelib.store.seek_jobs import SeekJobStore
from chalicelib.store.snapshots import SnapshotStore
from chalicelib.store.transformer import Transformer
from chalicelib.store.usage import UsageStore
from chalicelib.store.workers import Workers

Clock = Callable[[], float]


@dataclass
class Context:
    config: Config
    resources: ResourceStore
    log: MessageLog
    queues: QueueStore
    exact: ExactLeases
    skips: SkipStore
    packs: PackStates
    push: PushStore
    mappings: MappingStore
    usage: UsageStore
    identity: IdentityStore
    history: TopicHistory
    snapshots: SnapshotStore
    bounds: LogBounds
    counters: CounterStore
    queue_age: QueueAge
    schemas: SchemaStore
    last_attempts: LastAttemptStore
    seek_jobs: SeekJobStore
    slices: SliceStore
    invoker: AsyncInvoker
    resolver: EndpointResolver
    probes: StoreProbes
    workers: Workers
    exports: ExportStore
    ingestion: IngestionStore
    transformer: Transformer
    clock: Clock = time.time
    ids: IdSource = field(default_factory=IdSource)

    @property
    def ack_ids(self) -> AckIdCodec:
        return AckIdCodec(self.config.ack_secret)

    @classmethod
    def from_config(cls, config: Config, clock: Clock = time.time, ids: IdSource | None = None) -> Context:
        log, workers, invoker = MessageLog(config), Workers(), AsyncInvoker(config)
        return cls(config=config, resources=ResourceStore(config, workers), log=log,
                   queues=QueueStore(config, workers), exact=ExactLeases(config, workers), skips=SkipStore(config),
                   packs=PackStates(config),
                   push=PushStore(config), mappings=MappingStore(config), usage=UsageStore(config),
                   identity=IdentityStore(config), history=TopicHistory(config, log, workers),
                   snapshots=SnapshotStore(config), bounds=LogBounds(config), schemas=SchemaStore(config),
                   counters=CounterStore(config), queue_age=QueueAge(config), seek_jobs=SeekJobStore(config),
                   invoker=invoker, slices=SliceStore(config, invoker, workers), last_attempts=LastAttemptStore(config),
                   resolver=EndpointResolver(config, workers), probes=StoreProbes(config), workers=workers,
                   exports=ExportStore(config), ingestion=IngestionStore(config),
                   transformer=Transformer(config, functools.partial(transforms.run_batch, transforms.Limits(
                       config.transform_call_ms, config.transform_memory_bytes))),
                   clock=clock, ids=ids or IdSource())
