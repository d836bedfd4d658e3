"""The history checker's seek rule (words as in checker_index.py), judged only when the run drained, on
subscriptions with seeks, for every Seek answered ok:

``seek-window-missed``: a seek marks messages unacknowledged again, and each of them must be delivered after
the seek answered:

- after a seek to a time: every key with a known publish time (from any source-side delivery of its message
  id) at or after that time, acknowledged on publish before the seek was sent, that should reach the
  subscription;
- after a seek to a snapshot (the ok Snapshot of that name taken last before the seek was sent): every key
  acknowledged on publish before the snapshot was taken, that should reach the subscription, and that no Ack
  answered before the snapshot had confirmed on it.

Either way a key that a later seek to a time may have acknowledged (see below) is not owed.

A seek to a time also acknowledges: Google marks every message published before that time acknowledged,
delivered or not. :func:`time_seek_cover` names the keys a seek may so have settled, which the drained
rules (checker_rules.py) then do not demand: every known publish time of the key's message ids is before the
seek's time, and its first publish was sent before the seek (ok or unknown) answered, so it may have been
stored when the seek took effect.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from bench.chaos.checker_index import Index, Violation, narrowed, rfc3339_nanos
from bench.chaos.history import ERROR, OK, Seek, Snapshot, Subscription

SEEK_WINDOW_MISSED = "seek-window-missed"


class SeekWindows:
    """What every seek on every subscription looks up: message ids by publish time, keys' first confirmed ack."""

    def __init__(self, index: Index) -> None:
        self.index = index
        ordered = sorted(index.publish_times.items(), key=lambda item: item[1])
        self.published_nanos = [nanos for _, nanos in ordered]
        self.published_ids = [message_id for message_id, _ in ordered]
        self._cover: dict[str, dict[str, float]] = {}  # sub -> time_seek_cover of its seeks

    def missed(self, sub: Subscription, expected: set[str]) -> Iterator[Violation]:
        first_confirmed = self._first_confirmed_by_key(sub.name)
        for seek in self.index.seeks.get(sub.name, []):
            if seek.outcome != OK:
                continue
            if seek.time:
                yield from self._time_seek(sub, seek, expected)
            elif seek.snapshot:
                snapshot = self._snapshot_before(seek)
                if snapshot is not None:
                    yield from self._snapshot_seek(sub, seek, snapshot, expected, first_confirmed)

    def _acked_later(self, sub: str, key: str, seek: Seek) -> bool:
        """Whether a seek to a time sent after ``seek`` may have acknowledged ``key`` before it came again."""
        if sub not in self._cover:
            self._cover[sub] = time_seek_cover(self.index, self.index.effective_seeks.get(sub, []))
        return self._cover[sub].get(key, float("-inf")) > seek.t_sent

    def _time_seek(self, sub: Subscription, seek: Seek, expected: set[str]) -> Iterator[Violation]:
        target = rfc3339_nanos(seek.time)
        if target is None:
            return
        keys = {self.index.message_keys[m] for m in self.published_ids[bisect_left(self.published_nanos, target) :]}
        for key in sorted(keys & expected):
            publish = self.index.publish_answer.get(key)
            if publish is None or publish.t >= seek.t_sent or self._delivered_after(sub.name, key, seek.t):
                continue
            if self._acked_later(sub.name, key, seek):
                continue
            detail = f"{key}, published at or after {seek.time}, was not delivered again after the seek"
            yield Violation(SEEK_WINDOW_MISSED, sub.name, key, detail, (narrowed(publish, key), seek))

    def _snapshot_seek(
        self, sub: Subscription, seek: Seek, snapshot: Snapshot, expected: set[str], first_confirmed: dict[str, float]
    ) -> Iterator[Violation]:
        for key in sorted(expected):
            publish = self.index.publish_answer.get(key)
            if publish is None or publish.t >= snapshot.t_sent:
                continue
            if first_confirmed.get(key, float("inf")) < snapshot.t_sent or self._delivered_after(sub.name, key, seek.t):
                continue
            if self._acked_later(sub.name, key, seek):
                continue
            detail = f"{key}, unacknowledged in snapshot {snapshot.name}, was not delivered again after the seek"
            yield Violation(SEEK_WINDOW_MISSED, sub.name, key, detail, (narrowed(publish, key), snapshot, seek))

    def _snapshot_before(self, seek: Seek) -> Snapshot | None:
        taken = [s for s in self.index.snapshots.get(seek.snapshot, []) if s.t_sent < seek.t_sent]
        return max(taken, key=lambda s: s.t_sent) if taken else None

    def _delivered_after(self, sub: str, key: str, after: float) -> bool:
        deliveries = self.index.by_key.get(sub, {}).get(key)
        return bool(deliveries and deliveries[-1].t > after)

    def _first_confirmed_by_key(self, sub: str) -> dict[str, float]:
        """Per key, when the first Ack confirming one of its ack ids on ``sub`` answered."""
        first: dict[str, float] = {}
        for life in self.index.ack_ids.get(sub, {}).values():
            if life.delivery is None or not life.confirms:
                continue
            key, answered = life.delivery.key, life.confirms[0].t
            first[key] = min(first.get(key, answered), answered)
        return first


def time_seek_cover(index: Index, seeks: list[Seek]) -> dict[str, float]:
    """Per key that one of ``seeks`` (those to a time, ok or unknown) may have acknowledged (module docstring),
    when the last such seek was sent."""
    targets = [(target, seek.t, seek.t_sent) for seek in seeks if seek.time and seek.outcome != ERROR
               and (target := rfc3339_nanos(seek.time)) is not None]
    if not targets:
        return {}
    cover: dict[str, float] = {}
    for key, ids in index.key_ids.items():
        first = index.first_publish.get(key)
        times = [index.publish_times.get(message_id) for message_id in ids]
        if first is None or not times or None in times:
            continue
        latest = max(t for t in times if t is not None)
        sent = [t_sent for target, answered, t_sent in targets if latest < target and first.t_sent < answered]
        if sent:
            cover[key] = max(sent)
    return cover
