"""Message transforms per second per core, and what one adds to a message's latency (docs/transforms.md).

    python -m bench.transforms [--messages 5000] [--bytes 200]

One UDF of Google's examples' shape (upper-case the data, add an attribute) runs over ``--messages`` messages of
``--bytes`` each on one thread: once call by call, timing each (the added latency's p50 and p99), once as the
batches the transform function takes (100 messages a batch, base64 in and out: the messages per second of a
core). CPU time of the thread, so other work on the machine does not count.
"""

from __future__ import annotations

import argparse
import json
import time

from chalicelib.core.transforms import Limits, Message, Udf, engine, run_batch
from chalicelib.service.transforms import batch

UDF = Udf("stamp", "function stamp(message, metadata) {"
                   " return {data: message.data.toUpperCase(),"
                   " attributes: Object.assign({}, message.attributes, {stamped: metadata.message_id})}; }")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(messages: int, size: int) -> dict[str, float]:
    caps = Limits()
    eng = engine(caps)
    sample = [Message(b"x" * size, {"a": "1"}, str(i), "2026-11-27T00:00:00Z") for i in range(messages)]
    eng.apply([UDF], sample[0])  # compiled once per process
    each: list[float] = []
    for m in sample:
        start = time.thread_time()
        eng.apply([UDF], m)
        each.append(time.thread_time() - start)
    start = time.thread_time()
    for i in range(0, messages, 100):
        run_batch(caps, batch([UDF], sample[i:i + 100]))
    batched = time.thread_time() - start
    return {"messages": messages, "bytes": size, "per_core_per_second": round(messages / batched),
            "added_p50_us": round(percentile(each, 0.5) * 1e6, 1),
            "added_p99_us": round(percentile(each, 0.99) * 1e6, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Message transforms per second per core and their added latency.")
    p.add_argument("--messages", type=int, default=5_000)
    p.add_argument("--bytes", type=int, default=200)
    args = p.parse_args(argv)
    print(json.dumps(measure(args.messages, args.bytes), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
