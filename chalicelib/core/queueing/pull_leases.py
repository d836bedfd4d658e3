"""A pull's leases count from its answer, not from each receive (docs/decisions/pull-leases.md).

A pull makes up to ten ReceiveMessage calls; each leases what it receives for the visibility it asks for (the ack
deadline plus the retry policy's backoff, core/queueing/retry.py), counted from that receive. Google's ack deadline
starts when the pull answers. A pull is quick (tens of milliseconds) and that difference is noise; when a pull is
slow, its first receives' leases would end up to the pull's whole duration early, and a subscriber that
acknowledges within its deadline would see those messages again. So, when the pull answers, the receives older
than :func:`slack` have their messages' visibility set again, from then: a fast pull changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

SLACK_SECONDS = 1.0  # the most a lease may have run before the pull answers without being set again
SLACK_SHARE = 0.1  # ... and never more than this share of the ack deadline


def slack(deadline: int) -> float:
    """How old a receive may be when its pull answers and keep the lease it started."""
    return min(SLACK_SECONDS, SLACK_SHARE * deadline)


def stale(received_at: Mapping[str, float], now: float, deadline: int) -> list[str]:
    """The receipts (receipt -> monotonic time of their receive) whose lease began more than :func:`slack` before
    ``now``, in their order."""
    limit = slack(deadline)
    return [receipt for receipt, at in received_at.items() if now - at > limit]


def refreshed(stale_receipts: list[str], visibility: int, changes: Mapping[str, int]) -> list[tuple[str, int]]:
    """The visibility changes a pull answers with: ``changes`` (redeliveries' and last attempts' own visibility,
    which count from now as well) and the stale receipts' ``visibility`` again; one entry per receipt."""
    out = dict(changes)
    for receipt in stale_receipts:
        out.setdefault(receipt, visibility)
    return list(out.items())
