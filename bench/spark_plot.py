"""Plot ``spark_read.py --tiered`` results: MiB/s of each reader and CPU seconds per GiB read,
one group per backend (fs, moto S3), into ``results/spark_tiered.png``. A reader read in two
rounds (``name`` and ``name_2``) is shown over both: bytes over seconds, CPU seconds averaged.

    .venv/bin/python bench/spark_plot.py         # reads results/spark_tiered_{fs,s3}_latest.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
READERS = [("confluent_consumer", "one confluent-kafka\nconsumer (brokers)"),
           ("spark_read_brokers", "Spark through\nthe brokers"),
           ("spark_read_direct", "Spark direct\n(remoteStorage=...)"),
           ("spark_read_auto", "Spark direct\n(auto)")]
PARTS = [("reader_driver", "driver / consumer process", "#1f77b4"), ("reader_jvm", "Spark JVM", "#2ca02c"),
         ("reader_python_workers", "Spark Python workers", "#9467bd"), ("node", "tierlog node", "#ff7f0e"),
         ("moto", "moto S3 server", "#7f7f7f")]


def rounds(doc: dict, key: str) -> list[dict]:
    return [doc[k] for k in (key, key + "_2") if k in doc]


def mib_s(doc: dict, key: str) -> float:
    runs = rounds(doc, key)
    seconds = sum(r["seconds"] for r in runs)
    return doc["size_mib"] * len(runs) / seconds if seconds else 0.0


def cpu_per_gib(doc: dict, key: str, part: str) -> float:
    runs = rounds(doc, key)
    if not runs:
        return 0.0
    cpu = [r.get("cpu_s", {}) for r in runs]
    if part == "reader_driver":      # older results split nothing: all of the reader here
        values = [c.get(part, c.get("reader", 0)) for c in cpu]
    else:
        values = [c.get(part, 0) for c in cpu]
    return sum(values) / len(values) / (doc["size_mib"] / 1024)


def load(results: Path) -> dict[str, dict]:
    docs = {}
    for backend in ("fs", "s3"):
        path = results / f"spark_tiered_{backend}_latest.json"
        if path.exists():
            docs[backend] = json.loads(path.read_text())
    return docs


def plot(docs: dict[str, dict], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (speed, cpu) = plt.subplots(1, 2, figsize=(13, 4.8))
    width = 0.8 / max(1, len(docs))
    for i, (backend, doc) in enumerate(docs.items()):
        xs = [j + i * width for j in range(len(READERS))]
        values = [mib_s(doc, key) for key, _ in READERS]
        bars = speed.bar(xs, values, width, label=f"{backend} ({doc['size_mib'] / 1024:.0f} GiB, load "
                         f"{doc['machine']['load_avg_start'][0]:.1f}-{doc['machine']['load_avg_end'][0]:.1f})")
        speed.bar_label(bars, fmt="%.0f", fontsize=8)
        bottom = [0.0] * len(READERS)
        for part, label, color in PARTS:
            per_gib = [cpu_per_gib(doc, key, part) for key, _ in READERS]
            cpu.bar(xs, per_gib, width, bottom=bottom, color=color, edgecolor="white", hatch="//" if i else None,
                    label=f"{label} ({backend})" if any(per_gib) else None)
            bottom = [b + v for b, v in zip(bottom, per_gib)]
    for ax in (speed, cpu):
        ax.set_xticks([j + width * (len(docs) - 1) / 2 for j in range(len(READERS))])
        ax.set_xticklabels([label for _, label in READERS], fontsize=8)
        ax.legend(fontsize=7)
    speed.set_ylabel("MiB/s of record values (same run per backend)")
    speed.set_title("Reading a 90 %-tiered topic, local[2] on 2 shared cores")
    cpu.set_ylabel("CPU seconds per GiB read")
    cpu.set_title("Where the CPU goes")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> int:
    results = HERE / "results"
    docs = load(results)
    if not docs:
        print("no results/spark_tiered_{fs,s3}_latest.json: run bench/spark_read.py --tiered first", file=sys.stderr)
        return 1
    plot(docs, results / "spark_tiered.png")
    print(results / "spark_tiered.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
