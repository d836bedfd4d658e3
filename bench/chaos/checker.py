"""A Jepsen-style checker of a fault run's history (bench/chaos/history.py): it reads every operation the
clients made and what came of it, and judges the run against Pub/Sub's guarantees. It is pure: it never reads
the clock, only the times the history holds, and it indexes the history once (checker_index.py) so that a run
of a million operations is judged in one pass per rule.

A message is known by its key (an attribute its publisher sets, unique per message meant); a publish retried
after a lost answer may store it twice, under two message ids. The rules, one name each:

- delivery (checker_rules.py): ``lost``, ``stored-not-delivered`` and ``unsettled`` (judged only when the run
  drained), ``order``, ``filter-leak``;
- dead letters (checker_rules.py): ``dead-letter-count``, ``over-delivered``, ``delivered-after-dead-letter``
  (reported, but it fails no run: Google's dead lettering is best effort, see ``BEST_EFFORT``);
- exactly-once (checker_exactly.py): ``redelivered-after-ack``, ``stale-ack-accepted``,
  ``seek-replayed-outside``;
- seeks (checker_seek.py): ``seek-window-missed`` (judged only when the run drained).

A run that did not drain (its history does not end with End(drained=True)) may still hold messages in flight,
so the drained rules are then listed as not judged rather than reported. Each subscription also gets
statistics (checker_stats.py): deliveries, duplicates and the likely cause of each, acks by outcome.

``check`` returns a ``Report``; ``Report.to_dict`` keeps at most ten examples per rule and subscription, with
the total count, so that the report of a long run stays small.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.chaos.checker_exactly import EXACTLY_ONCE_RULES, redelivery_rules, stale_ack_rule
from bench.chaos.checker_index import Index, Violation, build_index
from bench.chaos.checker_rules import (
    DEAD_LETTER_LATE,
    DELIVERED_AFTER_DEAD_LETTER,
    DELIVERY_RULES,
    DRAINED_RULES,
    after_dead_letter_rule,
    dead_letter_count_rule,
    drained_rules,
    filter_rule,
    order_rule,
    over_delivered_rule,
)
from bench.chaos.checker_seek import SEEK_WINDOW_MISSED, SeekWindows, time_seek_cover
from bench.chaos.checker_stats import SubStats, sub_stats
from bench.chaos.history import Op, Subscription

__all__ = ["MAX_EXAMPLES", "RULES", "Report", "SubStats", "Violation", "check"]

MAX_EXAMPLES = 10
# Reported with their evidence but not failing a run: what Google documents as best effort. A dead-lettered
# message whose removal from its source was lost comes back there and is forwarded again (Google: dead
# lettering "is done on a best effort basis", "the same message might be dead lettered multiple times"); a
# first forward after more than maxDeliveryAttempts ("honored on a best effort basis").
BEST_EFFORT = (DELIVERED_AFTER_DEAD_LETTER, DEAD_LETTER_LATE)
NOT_JUDGED_UNLESS_DRAINED = (*DRAINED_RULES, SEEK_WINDOW_MISSED)
RULES = (*DELIVERY_RULES, *EXACTLY_ONCE_RULES, SEEK_WINDOW_MISSED)


@dataclass
class Report:
    violations: list[Violation] = field(default_factory=list)
    stats: dict[str, SubStats] = field(default_factory=dict)
    drained: bool = False

    @property
    def passed(self) -> bool:
        return all(v.rule in BEST_EFFORT for v in self.violations)

    @property
    def not_judged(self) -> tuple[str, ...]:
        return () if self.drained else NOT_JUDGED_UNLESS_DRAINED

    def by_rule(self) -> dict[str, int]:
        return dict(sorted(Counter(v.rule for v in self.violations).items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "best_effort_rules": list(BEST_EFFORT),
            "drained": self.drained,
            "not_judged": list(self.not_judged),
            "violations_by_rule": self.by_rule(),
            "violations": _grouped_examples(self.violations),
            "stats": {name: stats.to_dict() for name, stats in self.stats.items()},
        }


def _grouped_examples(violations: list[Violation]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[Violation]] = defaultdict(list)
    for violation in violations:
        groups[(violation.rule, violation.sub)].append(violation)
    return [
        {"rule": rule, "sub": sub, "count": len(found), "examples": [v.to_dict() for v in found[:MAX_EXAMPLES]]}
        for (rule, sub), found in sorted(groups.items())
    ]


def check(ops: Iterable[Op], skew_tolerance: float = 1.0) -> Report:
    """Judge a history; ``skew_tolerance`` (seconds) is how far the service's lease clock may run behind."""
    index = build_index(ops)
    report = Report(drained=index.drained)
    seek_windows = SeekWindows(index)
    for sub in index.subs.values():
        stats = report.stats[sub.name] = sub_stats(index, sub, skew_tolerance)
        report.violations.extend(_always_judged(index, sub, skew_tolerance))
        if index.drained:
            expected = index.expected_keys(sub.name)
            stats.keys_judged = len(expected)
            seek_acked = frozenset(time_seek_cover(index, index.effective_seeks.get(sub.name, [])))
            report.violations.extend(drained_rules(index, sub, expected, seek_acked))
            if sub.seeks:
                report.violations.extend(seek_windows.missed(sub, expected))
    return report


def _always_judged(index: Index, sub: Subscription, skew_tolerance: float) -> Iterator[Violation]:
    yield from filter_rule(index, sub)
    if sub.ordered:
        yield from order_rule(index, sub)
    if sub.exactly_once:
        yield from redelivery_rules(index, sub)
        yield from stale_ack_rule(index, sub, skew_tolerance)
    if sub.dead_letter_of:
        yield from dead_letter_count_rule(index, sub)
    if sub.max_delivery_attempts > 0:
        yield from over_delivered_rule(index, sub)
        yield from after_dead_letter_rule(index, sub)
