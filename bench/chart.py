"""bench/chart.png: throughput against the baselines, and $ per million messages against Google."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any


def draw(doc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = doc["results"]
    metro_keys = [k for k, r in results.items() if r["system"] == "metro"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.4))

    labels, metro_tp, base_tp = [], [], []
    for k in metro_keys:
        r = results[k]
        base = results.get(r.get("compare_to", ""), {})
        labels.append("\n".join(textwrap.wrap(f"{k}: {r['title']}", 16)))
        metro_tp.append(r["throughput_msgs_s"])
        base_tp.append(base.get("throughput_msgs_s", 0.0))
    x = range(len(labels))
    ax1.bar([i - 0.2 for i in x], metro_tp, width=0.4, label="Metro (published -> acked)", color="#1f77b4")
    ax1.bar([i + 0.2 for i in x], base_tp, width=0.4, label="compared run (SQS, SNS->SQS, A)", color="#aaaaaa")
    for i, r in zip(x, (results[k] for k in metro_keys)):
        ratio = r.get("ratio_vs_baseline")
        if ratio is not None:
            ax1.annotate(f"{ratio:.0%}", (i - 0.2, metro_tp[i]), ha="center", va="bottom", fontsize=9)
    ax1.set_xticks(list(x), labels, fontsize=8)
    ax1.set_ylabel("messages / s (local emulator)")
    ax1.set_title("Throughput vs. baselines on the same emulator")
    ax1.legend(fontsize=8)

    aws = [results[k]["cost"]["usd_per_million"] for k in metro_keys]
    google = [(results[k].get("google") or {}).get("usd_per_million", 0.0) for k in metro_keys]
    ax2.bar([i - 0.2 for i in x], aws, width=0.4, label="Metro on AWS (list prices)", color="#ff7f0e")
    ax2.bar([i + 0.2 for i in x], google, width=0.4, label="Google Pub/Sub ($40/TiB)", color="#2ca02c")
    for i in x:
        ax2.annotate(f"${aws[i]:.2f}", (i - 0.2, aws[i]), ha="center", va="bottom", fontsize=8)
        ax2.annotate(f"${google[i]:.2f}", (i + 0.2, google[i]), ha="center", va="bottom", fontsize=8)
    ax2.set_yscale("log")
    ax2.set_xticks(list(x), labels, fontsize=8)
    ax2.set_ylabel("$ per million messages (log)")
    ax2.set_title(f"Cost per million messages (prices {doc['prices']['as_of']})")
    ax2.legend(fontsize=8)

    fig.suptitle(f"Metro benchmark {doc['date']} ({'quick' if doc['quick'] else 'full'} run)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
