"""``python -m bench.capacity [--profile NAME|FILE.json] [--seed N] [--tick S] [--plain] [--json]``: simulate a day.

``--write-docs`` rewrites docs/deploy.md's generated capacity blocks from the default profile's day; ``--check-docs``
only compares them and exits 1 when they differ (tests/unit/test_capacity_docs.py does the same).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from bench.capacity import report
from bench.capacity.profile import DEFAULT, PROFILES, load
from bench.capacity.simulate import simulate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="default", help=f"one of {', '.join(PROFILES)}, or a JSON file")
    parser.add_argument("--seed", type=int, help="the arrival draws' seed (default: the profile's)")
    parser.add_argument("--tick", type=float, help="seconds per arrival step (default: the profile's, 1)")
    parser.add_argument("--plain", action="store_true", help="plain text tables instead of rich's")
    parser.add_argument("--json", action="store_true", help="the day's figures as JSON")
    docs = parser.add_mutually_exclusive_group()
    docs.add_argument("--write-docs", action="store_true", help="rewrite docs/deploy.md's capacity blocks")
    docs.add_argument("--check-docs", action="store_true", help="exit 1 when docs/deploy.md's blocks are stale")
    args = parser.parse_args(argv)

    if args.write_docs or args.check_docs:
        text = report.DOC.read_text()
        rendered = report.blocks(simulate(DEFAULT))
        if args.check_docs:
            stale = [b for b, body in rendered.items() if report.current(text, b) != body]
            if stale:
                print(f"docs/deploy.md: stale block(s) {', '.join(stale)}: run python -m bench.capacity --write-docs")
                return 1
            return 0
        report.DOC.write_text(report.write(text, rendered))
        print(f"wrote {', '.join(rendered)} into {report.DOC}")
        return 0

    profile = load(args.profile)
    if args.seed is not None:
        profile = dataclasses.replace(profile, seed=args.seed)
    if args.tick is not None:
        profile = dataclasses.replace(profile, tick_s=args.tick)
    day = simulate(profile)
    if args.json:
        out = {"profile": profile.name, "messages": day.messages, "usd_per_million": day.usd_per_million,
               "peak_concurrency": day.peak_concurrency,
               "first_binding": dataclasses.asdict(day.first_binding) if day.first_binding else None,
               "nearest": dataclasses.asdict(day.nearest), "throttled": day.throttled(),
               "hours": [{**{k: v for k, v in dataclasses.asdict(h).items() if k != "usage"},
                          "usage": dataclasses.asdict(h.usage), "usd": h.cost, "usd_per_million": h.usd_per_million}
                         for h in day.hours]}
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        report.print_day(day, profile, plain=args.plain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
