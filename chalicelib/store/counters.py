"""Live usage counters in the resources table (core/live.py): one item per topic or subscription under
``counters#{project}``, written by flushing the process's tally at most once per flush interval."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from chalicelib.config import Config
from chalicelib.core.live import RATE_OF, Tally
from chalicelib.core.names import Name
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors

log = logging.getLogger(__name__)


def counters_pk(project: str) -> str:
    return f"counters#{project}"


def counter_key(name: Name) -> str:
    """The sort key of a topic's or a subscription's counters item."""
    return _PREFIXES[name.collection] + name.id


_PREFIXES = {"topics": "topic#", "subscriptions": "sub#"}


class CounterStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table
        self._interval = config.counter_flush_seconds
        self._lock = threading.Lock()
        self._tally: Tally | None = None

    def add(self, name: Name, values: Mapping[str, int], now: float) -> None:
        """Count ``values`` for the topic or subscription; flush the tally when the interval has passed."""
        if self._interval < 0:  # counters off
            return
        with self._lock:
            if self._tally is None:
                self._tally = Tally(now)
            self._tally.add(name.project, counter_key(name), values)
            due = now - self._tally.started >= self._interval
            tally = self._tally if due else None
            if due:
                self._tally = None
        if tally is not None:
            self.flush(tally, now)

    def flush(self, tally: Tally, now: float) -> None:
        """One UpdateItem per resource of the tally; a failure is logged and the tally dropped."""
        span = max(now - tally.started, 0.001)
        for (project, key), counts in tally.counts.items():
            kind = "topic" if key.startswith(_PREFIXES["topics"]) else "subscription"
            names = {f"#{name}": name for name in counts}
            values: dict[str, Any] = {f":{name}": {"N": str(n)} for name, n in counts.items()}
            values.update({":rn": {"N": str(counts.get(RATE_OF[kind], 0))}, ":rs": {"N": f"{span:.3f}"},
                           ":at": {"N": f"{now:.3f}"}})
            adds = ", ".join(f"#{name} :{name}" for name in counts)
            try:
                with aws_errors("UpdateItem (live counters)"):
                    self._ddb.update_item(
                        TableName=self._table, Key={"pk": {"S": counters_pk(project)}, "sk": {"S": key}},
                        UpdateExpression=f"ADD {adds} SET rate_n = :rn, rate_span = :rs, flushed = :at",
                        ExpressionAttributeNames=names, ExpressionAttributeValues=values)
            except Exception:  # usage figures must never fail the request that counted them
                log.warning("live counters of %s %s not written", project, key, exc_info=True)

    def read(self, name: Name, unflushed: bool = False) -> dict[str, Any]:
        """The stored counters of one topic or subscription ({} if none yet), plus this process's tally not
        flushed yet when ``unflushed``."""
        key = {"pk": {"S": counters_pk(name.project)}, "sk": {"S": counter_key(name)}}
        with aws_errors("GetItem (live counters)"):
            item = self._ddb.get_item(TableName=self._table, Key=key).get("Item", {})
        stored: dict[str, Any] = {k: float(v["N"]) for k, v in item.items() if "N" in v}
        if unflushed:
            with self._lock:
                mine = dict(self._tally.counts.get((name.project, counter_key(name)), {})) if self._tally else {}
            for k, n in mine.items():
                stored[k] = stored.get(k, 0) + n
        return stored

    def project_total(self, project: str, name: str) -> int:
        """The sum of one counter over the project's topics (one Query)."""
        values = {":pk": {"S": counters_pk(project)}, ":t": {"S": _PREFIXES["topics"]}}
        total, args = 0, {"TableName": self._table, "KeyConditionExpression": "pk = :pk AND begins_with(sk, :t)",
                          "ExpressionAttributeValues": values}
        while True:
            with aws_errors("Query (live counters)"):
                resp = self._ddb.query(**args)  # type: ignore[arg-type]
            total += sum(int(item.get(name, {}).get("N", "0")) for item in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return total
            args["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
