"""A day of traffic against the quotas, on the event queue of engine.py.

Events:

- ``tick`` every ``profile.tick_s`` seconds: the publish requests of the step arrive (a Poisson draw per topic class
  around the diurnal rate, with the seeded generator), and go through the quotas in the order a request meets
  them: API Gateway's token bucket (account), Lambda's scaling rate (the API function) and account concurrency, S3's
  PUT rate per prefix (topic), the DynamoDB partition of the topic, the messages table's on-demand throughput.
  Consumers take what was published in the step before: pull loops (mean-field: how full pulls are, how many
  loops wait in a long poll holding a Lambda), push mappings (batches, concurrency), the stream's fan-out lane of
  a topic above the direct fan-out threshold (one topic's records in order: a backlog when records come faster than
  the lane sends, or hands out the slices of a topic above the slice size; records more than ``FANOUT_LAG_S``
  behind count as delayed; the slices run in parallel, holding Lambda concurrency);
- ``retry``: publish requests a quota refused come back after the client's backoff (1, 2, 4 ... 32 s), up to
  ``MAX_ATTEMPTS``, then count as failed;
- ``adopt``: the messages table's on-demand capacity takes a new peak 30 minutes after it was reached;
- ``hour``: closes an hour's figures.

Short invocations are counted by Little's law within a step (concurrency = rate x duration); long pulls hold
their Lambda for the whole wait. Everything a step does is priced with bench's prices (usage.py).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from bench.capacity import subscribers
from bench.capacity import usage as ops
from bench.capacity.engine import EventQueue
from bench.capacity.profile import DAY_S, Profile, TopicClass
from bench.capacity.quotas import DEFAULT_QUOTAS, Quotas
from bench.capacity.subscribers import Consumers
from bench.capacity.usage import Operation, Usage
from bench.pricing import LAMBDA_MEMORY_GB

APIGW = "API Gateway requests/s"
LAMBDA_SCALING = "Lambda scaling rate"
LAMBDA = "Lambda concurrency"
S3_PREFIX = "S3 PUT/s per prefix"
DDB_PARTITION = "DynamoDB partition WCU/s"
DDB_TABLE = "DynamoDB table WCU/s (on-demand)"
FANOUT_LANE = "fan-out lane (one topic's stream records)"
QUOTA_ORDER = (APIGW, LAMBDA_SCALING, LAMBDA, S3_PREFIX, DDB_PARTITION, DDB_TABLE, FANOUT_LANE)
MAX_ATTEMPTS = 7  # a publish request's tries: the first and six retries (1 + 2 + ... + 32 s of backoff)
STREAM_INVOCATION_MS = 10.0  # a stream invocation whose records publish already fanned out (all skipped)
STREAM_BATCH_SIZE = 100.0  # infra/template.py: the stream mapping's BatchSize
FANOUT_LAG_S = 60.0  # a wide topic's records waiting longer than this in its lane count as delayed


def poisson(rng: random.Random, mean: float) -> float:
    """A Poisson draw (normal approximation above 30)."""
    if mean <= 0:
        return 0.0
    if mean > 30:
        return max(0.0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return float(k)


@dataclass
class HourStats:
    hour: int
    offered_messages: float = 0.0
    messages: float = 0.0  # published: the log item written
    peak_messages_s: float = 0.0
    peak_api_rps: float = 0.0
    peak_concurrency: float = 0.0
    peak_long_pulls: float = 0.0  # Lambdas held by pulls, waiting or collecting
    peak_partition_wcu: float = 0.0  # the busiest topic's messages-table partition
    peak_table_wcu: float = 0.0
    peak_prefix_puts: float = 0.0  # the busiest topic's S3 PUT/s
    peak_fanout_lag_s: float = 0.0  # the longest wait of a wide topic's record for its fan-out
    failed_publishes: float = 0.0  # requests refused MAX_ATTEMPTS times
    throttled: dict[str, float] = field(default_factory=dict)  # refused or delayed requests, by quota
    utilization: dict[str, float] = field(default_factory=dict)  # peak demand / capacity, by quota
    usage: Usage = field(default_factory=Usage)
    consumer_shortfall: float = 0.0  # messages/s subscribers could not take at the peak (not an AWS quota)

    def peak(self, name: str, value: float) -> None:
        if value > self.utilization.get(name, 0.0):
            self.utilization[name] = value

    @property
    def binding(self) -> str:
        """The quota closest to (or past) its limit this hour."""
        return max(QUOTA_ORDER, key=lambda q: self.utilization.get(q, 0.0))

    @property
    def cost(self) -> float:
        return self.usage.cost()

    @property
    def usd_per_million(self) -> float:
        return self.cost * 1e6 / self.messages if self.messages else 0.0


@dataclass(frozen=True)
class Binding:
    quota: str
    time_s: float
    utilization: float

    @property
    def clock(self) -> str:
        s = int(self.time_s)
        return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass
class DayResult:
    profile: str
    hours: list[HourStats]
    first_binding: Binding | None  # the first quota that refused or delayed a request, and when
    nearest: Binding  # the quota nearest its limit over the day (its peak utilization)
    events: int

    @property
    def messages(self) -> float:
        return sum(h.messages for h in self.hours)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for h in self.hours:
            total = total + h.usage
        return total

    @property
    def usd_per_million(self) -> float:
        return self.usage.cost() * 1e6 / self.messages if self.messages else 0.0

    @property
    def peak_concurrency(self) -> float:
        return max(h.peak_concurrency for h in self.hours)

    @property
    def peak_hour(self) -> HourStats:
        return max(self.hours, key=lambda h: h.peak_concurrency)

    def throttled(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for h in self.hours:
            for k, v in h.throttled.items():
                out[k] = out.get(k, 0.0) + v
        return out


@dataclass(frozen=True)
class ClassModel:
    """A topic class's constant arithmetic: operations and capacities that do not depend on the rate."""

    topic: TopicClass
    publish: Operation
    fanout: Operation | None  # the lane's part per record, when the stream fans out (above the direct threshold)
    slices: Operation | None  # every slice of one record together (``ms``: one slice's), above the slice size
    slice_count: int
    fanout_batch: Operation  # per fan-out invocation: the invocation and the subscriptions Query
    push: Operation
    wide: bool
    logged_inline: bool  # its requests keep their bytes in the log item: no S3 PUT
    item_bytes: int  # its log item
    partitions: int  # partition keys its log spreads over


class Day:
    """One simulated day of ``profile`` against ``quotas``."""

    def __init__(self, profile: Profile, quotas: Quotas = DEFAULT_QUOTAS) -> None:
        self.p, self.q, self.h = profile, quotas, profile.handlers
        self.rng = random.Random(profile.seed)
        self.events = EventQueue()
        self.models = [self._model(c) for c in profile.topics]
        self.shares = profile.shares()
        self.pending: list[dict[int, float]] = [{} for _ in profile.topics]  # class -> attempt -> requests
        # messages/s per topic published in the last step (at the start: the day's rate, as if the day before ran)
        self.delivered = [profile.rate(0.0) * share / c.count for c, share in zip(profile.topics, self.shares)]
        self.lane_backlog = [0.0] * len(profile.topics)  # stream records waiting, per wide topic
        self.bucket = float(quotas.apigw_burst)
        self.api_prev: float | None = None  # the API function's concurrency in the last step
        self.adopted_peak = profile.table_previous_peak_wcu
        self.scheduled_peak = profile.table_previous_peak_wcu
        self.hours: list[HourStats] = []
        self.hour = HourStats(0)
        self.first: Binding | None = None
        self._consumer_cache: dict[tuple[int, float], Consumers] = {}

    # -- per class constants -----------------------------------------------------------------------------------

    def _model(self, c: TopicClass) -> ClassModel:
        h, subs = self.h, c.subscriptions_per_topic
        wide = subs > h.direct_fanout_max_subscriptions
        threads, inline = h.send_threads, h.inline_max_bytes
        fanout, slices, count = None, None, 0
        logged = ops.logged_inline(c.per_request, c.message_bytes, streamed=wide, log_max=h.log_inline_max_bytes,
                                   inline_max=inline)
        if wide and ops.slice_count(subs, h.fanout_slice_subscriptions):
            cut = ops.fanout_sliced(c.per_request, c.message_bytes, subs, h.fanout_slice_subscriptions,
                                    threads=threads, inline_max=inline, q=self.q)
            fanout, slices, count = cut.lane, cut.slices, cut.count
        elif wide:
            fanout = ops.fanout_record(c.per_request, c.message_bytes, subs, threads=threads, inline_max=inline,
                                       q=self.q)
        return ClassModel(
            topic=c,
            publish=ops.publish(c.per_request, c.message_bytes, subs, direct_max=h.direct_fanout_max_subscriptions,
                                threads=threads, inline_max=h.inline_max_bytes, log_inline_max=h.log_inline_max_bytes,
                                pull=c.subscriptions.pull, q=self.q),
            fanout=fanout,
            slices=slices,
            slice_count=count,
            fanout_batch=ops.fanout_batch(subs),
            push=ops.push_batch(h.push_endpoint_ms),
            wide=wide,
            logged_inline=logged,
            item_bytes=ops.log_item_bytes(c.per_request, c.message_bytes, logged),
            partitions=ops.log_partitions(c.ordered),
        )

    # -- consumers ---------------------------------------------------------------------------------------------

    def _consumers(self, i: int) -> Consumers:
        """The subscribers of one topic of class ``i`` (cached by the rate to 3 significant digits)."""
        lam = float(f"{self.delivered[i]:.3g}")
        key = (i, lam)
        found = self._consumer_cache.get(key)
        if found is None:
            found = self._consumers_at(i, lam)
            self._consumer_cache[key] = found
        return found

    def _consumers_at(self, i: int, lam: float) -> Consumers:
        cm = self.models[i]
        subs = cm.topic.subscriptions
        total = Consumers()
        parts = []
        if subs.pull:
            parts.append((subs.pull, subscribers.pull_subscription(lam, cm.topic, self.h)))
        if subs.push:
            parts.append((subs.push, subscribers.push_subscription(lam, cm.push, self.h, self.q)))
        for count, one in parts:
            total.api_rps += one.api_rps * count
            total.api_concurrency += one.api_concurrency * count
            total.push_concurrency += one.push_concurrency * count
            total.push_invocations += one.push_invocations * count
            total.long_pulls += one.long_pulls * count
            total.usage_s.add(one.usage_s, count)
            total.shortfall = max(total.shortfall, one.shortfall)
        return total

    # -- events ------------------------------------------------------------------------------------------------

    def _retry(self, i: int, attempt: int, requests: float) -> None:
        def fire(_t: float) -> None:
            self.pending[i][attempt] = self.pending[i].get(attempt, 0.0) + requests
        self.events.after(min(32.0, 2.0 ** (attempt - 2)), fire)

    def _adopt(self, value: float) -> None:
        def fire(_t: float) -> None:
            self.adopted_peak = max(self.adopted_peak, value)
        self.events.after(self.q.ddb_on_demand_growth_window_s, fire)

    def _throttle(self, name: str, refused: float, t: float, utilization: float) -> None:
        if refused <= 1e-9:
            return
        self.hour.throttled[name] = self.hour.throttled.get(name, 0.0) + refused
        if self.first is None:
            self.first = Binding(name, t, utilization)

    def _close_hour(self, t: float) -> None:
        self.hours.append(self.hour)
        self.hour = HourStats(len(self.hours))

    def tick(self, t: float) -> None:  # noqa: PLR0915 (one step through the quotas, in the order a request meets them)
        p, q, dt, hour = self.p, self.q, self.p.tick_s, self.hour
        rate = p.rate(t + dt / 2)
        n = len(self.models)
        # offered publish requests per topic in this step, by attempt
        offered: list[dict[int, float]] = []
        for i, cm in enumerate(self.models):
            c = cm.topic
            mean = rate * self.shares[i] / c.per_request * dt
            by_attempt = self.pending[i]
            self.pending[i] = {}
            by_attempt[1] = by_attempt.get(1, 0.0) + poisson(self.rng, mean) / c.count
            offered.append(by_attempt)
            hour.offered_messages += by_attempt[1] * c.count * c.per_request
        pub = [sum(o.values()) / dt for o in offered]  # publish requests/s per topic
        cons = [self._consumers(i) for i in range(n)]
        counts = [cm.topic.count for cm in self.models]

        # API Gateway: a token bucket of apigw_burst above apigw_rps
        api_demand = sum(counts[i] * (pub[i] + cons[i].api_rps) for i in range(n))
        allowed = min(api_demand * dt, q.apigw_rps * dt + self.bucket)
        self.bucket = min(float(q.apigw_burst), max(0.0, self.bucket + q.apigw_rps * dt - allowed))
        f_api = allowed / (api_demand * dt) if api_demand else 1.0
        hour.peak(APIGW, api_demand / q.apigw_rps)
        self._throttle(APIGW, api_demand * dt * (1 - f_api), t, api_demand / q.apigw_rps)

        # Lambda: the API function's scaling rate, then the account's concurrency
        fan_busy = [0.0] * n
        for i, cm in enumerate(self.models):
            if cm.fanout is not None:
                fan_busy[i] = min(1.0, (self.lane_backlog[i] / dt + pub[i]) * cm.fanout.ms / 1000)
            if cm.slices is not None:  # what the lane hands out in a step runs in parallel: Little's law
                fan_busy[i] += min(1000 / cm.fanout.ms if cm.fanout else math.inf, pub[i]) * cm.slice_count \
                    * cm.slices.ms / 1000
        api_conc = f_api * sum(counts[i] * (pub[i] * self.models[i].publish.ms / 1000 + cons[i].api_concurrency)
                               for i in range(n))
        other_conc = sum(counts[i] * (cons[i].push_concurrency + fan_busy[i]) for i in range(n))
        if self.api_prev is None:
            self.api_prev = api_conc
        # new environments beyond the last step's, up to the account's concurrency, come at the scaling rate
        ceiling = self.api_prev + q.lambda_scaling_per_10s * dt / 10
        wanted = min(api_conc, float(q.lambda_concurrency))
        f_scale = min(1.0, ceiling / wanted) if wanted > ceiling else 1.0
        self._throttle(LAMBDA_SCALING, (1 - f_scale) * api_demand * f_api * dt, t, wanted / ceiling)
        api_conc *= f_scale
        demand = api_conc + other_conc
        f_lambda = min(1.0, q.lambda_concurrency / demand) if demand else 1.0
        hour.peak(LAMBDA, demand / q.lambda_concurrency)
        invocations_s = api_demand * f_api * f_scale + sum(counts[i] * cons[i].push_invocations for i in range(n))
        self._throttle(LAMBDA, (1 - f_lambda) * invocations_s * dt, t, demand / q.lambda_concurrency)
        concurrency = demand * f_lambda
        self.api_prev = api_conc * f_lambda
        hour.peak_concurrency = max(hour.peak_concurrency, concurrency)
        hour.peak_long_pulls = max(hour.peak_long_pulls, f_api * f_lambda * sum(
            counts[i] * cons[i].long_pulls for i in range(n)))
        hour.peak_api_rps = max(hour.peak_api_rps, api_demand * f_api)
        reached = f_api * f_scale * f_lambda  # the share of publish requests a handler runs for

        # per topic: S3 PUT rate of the prefix (requests not logged inline), then the topic's log partitions (the
        # requests spread evenly over them); then the table
        written = [0.0] * n
        table_wcu = 0.0
        for i, cm in enumerate(self.models):
            puts = pub[i] * reached
            s3_puts = 0.0 if cm.logged_inline else puts
            f_s3 = min(1.0, q.s3_put_per_prefix / s3_puts) if s3_puts else 1.0
            hour.peak(S3_PREFIX, s3_puts / q.s3_put_per_prefix)
            hour.peak_prefix_puts = max(hour.peak_prefix_puts, s3_puts)
            self._throttle(S3_PREFIX, counts[i] * puts * (1 - f_s3) * dt, t, s3_puts / q.s3_put_per_prefix)
            wcu = puts * f_s3 * ops.partition_writes(cm.wide, cm.item_bytes)
            limit = q.ddb_partition_wcu * cm.partitions
            f_part = min(1.0, limit / wcu) if wcu else 1.0
            hour.peak(DDB_PARTITION, wcu / limit)
            hour.peak_partition_wcu = max(hour.peak_partition_wcu, wcu * f_part / cm.partitions)
            self._throttle(DDB_PARTITION, counts[i] * puts * f_s3 * (1 - f_part) * dt, t, wcu / limit)
            # a request the partition refused has stored its object and sent its messages already
            hour.usage.add(cm.publish.usage, counts[i] * puts * f_s3 * (1 - f_part) * dt)
            written[i] = puts * f_s3 * f_part
            table_wcu += counts[i] * wcu * f_part
        capacity = min(float(q.ddb_table_wcu), max(float(q.ddb_on_demand_initial_wcu), 2 * self.adopted_peak))
        f_table = min(1.0, capacity / table_wcu) if table_wcu else 1.0
        hour.peak(DDB_TABLE, table_wcu / capacity)
        hour.peak_table_wcu = max(hour.peak_table_wcu, table_wcu * f_table)
        self._throttle(DDB_TABLE, sum(counts[i] * written[i] for i in range(n)) * (1 - f_table) * dt, t,
                       table_wcu / capacity)
        if table_wcu * f_table > self.scheduled_peak:
            self.scheduled_peak = table_wcu * f_table
            self._adopt(self.scheduled_peak)

        # what got through; the rest comes back after the client's backoff
        messages_s = 0.0
        for i, cm in enumerate(self.models):
            ok = written[i] * f_table / pub[i] if pub[i] else 1.0
            for attempt, requests in offered[i].items():
                refused = requests * (1 - ok)
                if refused <= 1e-9:
                    continue
                if attempt < MAX_ATTEMPTS:
                    self._retry(i, attempt + 1, refused)
                else:
                    hour.failed_publishes += refused * counts[i]
            done = written[i] * f_table  # requests/s per topic
            self.delivered[i] = done * cm.topic.per_request
            messages_s += counts[i] * self.delivered[i]
            hour.usage.add(cm.publish.usage, counts[i] * done * dt)
            hour.usage.add(cons[i].usage_s, counts[i] * dt * f_api * f_lambda)
            hour.consumer_shortfall = max(hour.consumer_shortfall, cons[i].shortfall)
            self._fan_out(i, done, rate * self.shares[i] / cm.topic.per_request / counts[i], t, hour)
        stream_records = sum(counts[i] * written[i] * f_table for i in range(n))
        shards = max(1.0, math.ceil(table_wcu * f_table / q.ddb_partition_wcu))
        invocations = min(stream_records, shards * self.h.stream_parallelization * self.h.stream_polls_per_s)
        hour.usage.invocations += invocations * dt
        hour.usage.gb_s += invocations * dt * STREAM_INVOCATION_MS / 1000 * LAMBDA_MEMORY_GB
        hour.messages += messages_s * dt
        hour.peak_messages_s = max(hour.peak_messages_s, messages_s)
        self.events.after(dt, self.tick)

    def _fan_out(self, i: int, records_s: float, mean_s: float, t: float, hour: HourStats) -> None:
        """A wide topic's stream lane: its records one after another, at the fan-out's pace per record. A batch holds
        what waits, up to the mapping's 100 records and what fits the function's timeout."""
        cm, dt = self.models[i], self.p.tick_s
        if cm.fanout is None:
            return
        per_record = cm.fanout.ms / 1000
        backlog = self.lane_backlog[i] + records_s * dt
        done = min(backlog, dt / per_record)
        self.lane_backlog[i] = backlog - done
        per_batch = max(1.0, min(backlog, STREAM_BATCH_SIZE, math.floor(self.q.lambda_timeout_s / per_record)))
        lag = self.lane_backlog[i] * per_record
        hour.peak(FANOUT_LANE, mean_s * per_record)
        hour.peak_fanout_lag_s = max(hour.peak_fanout_lag_s, lag)
        if lag > FANOUT_LAG_S:  # records wait in the lane: delayed, not refused
            self._throttle(FANOUT_LANE, cm.topic.count * self.lane_backlog[i], t, mean_s * per_record)
        hour.usage.add(cm.fanout.usage, cm.topic.count * done)
        if cm.slices is not None:
            hour.usage.add(cm.slices.usage, cm.topic.count * done)
        hour.usage.add(cm.fanout_batch.usage, cm.topic.count * done / per_batch)
        self.delivered[i] = done / dt * cm.topic.per_request  # the subscriptions get what the lane sent

    def run(self, seconds: float = DAY_S) -> DayResult:
        self.events.at(0.0, self.tick)
        for h in range(1, math.ceil(seconds / 3600) + 1):
            self.events.at(min(h * 3600.0, seconds) - 1e-6, self._close_hour)
        self.events.run(seconds)
        nearest_hour = max(self.hours, key=lambda hr: hr.utilization.get(hr.binding, 0.0))
        nearest = Binding(nearest_hour.binding, nearest_hour.hour * 3600.0,
                          nearest_hour.utilization.get(nearest_hour.binding, 0.0))
        return DayResult(self.p.name, self.hours, self.first, nearest, self.events.processed)


def simulate(profile: Profile, quotas: Quotas = DEFAULT_QUOTAS, seconds: float = DAY_S) -> DayResult:
    """Replay ``seconds`` (a day by default) of ``profile``; deterministic for the profile's seed."""
    return Day(profile, quotas).run(seconds)
