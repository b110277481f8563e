"""Render a single-node results document: a markdown table with tierlog/Tansu
ratios, and a two-panel PNG (throughput bars, latency percentiles)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["markdown", "plot", "value"]

BASE, OTHER = "tierlog", "tansu"
MIB = 2**20

# (label, phase, path into the phase's figures, decimals)
ROWS = [
    ("produce acks=1: MiB/s", "produce_acks1", ("mib_per_s",), 1),
    ("produce acks=1: records/s", "produce_acks1", ("records_per_s",), 0),
    ("produce acks=1: latency p50 ms (closed loop)", "produce_acks1", ("latency_ms", "p50"), 1),
    ("produce acks=1: latency p99 ms (closed loop)", "produce_acks1", ("latency_ms", "p99"), 1),
    ("produce acks=all: MiB/s", "produce_acksall", ("mib_per_s",), 1),
    ("produce acks=all: records/s", "produce_acksall", ("records_per_s",), 0),
    ("produce acks=all: latency p50 ms (closed loop)", "produce_acksall", ("latency_ms", "p50"), 1),
    ("produce acks=all: latency p99 ms (closed loop)", "produce_acksall", ("latency_ms", "p99"), 1),
    ("consume from start: MiB/s", "consume", ("mib_per_s",), 1),
    ("consume from start: records/s", "consume", ("records_per_s",), 0),
    ("fixed rate: achieved MiB/s", "rate", ("mib_per_s",), 1),
    ("fixed rate: latency p50 ms", "rate", ("latency_ms", "p50"), 2),
    ("fixed rate: latency p99 ms", "rate", ("latency_ms", "p99"), 2),
    ("fixed rate: latency p99.9 ms", "rate", ("latency_ms", "p99.9"), 2),
    ("fixed rate: latency max ms", "rate", ("latency_ms", "max"), 1),
    ("fixed rate: broker round trip avg ms", "rate", ("broker_rtt_ms", "avg"), 2),
    ("fixed rate: broker CPU s per GiB", "rate", ("broker_cpu_s_per_gib",), 1),
    ("fixed rate: broker blocked in disk waits (D state), %", "rate", ("disk_wait_pct",), 1),
    ("produce acks=1: broker blocked in disk waits, %", "produce_acks1", ("disk_wait_pct",), 1),
    ("produce acks=all: broker blocked in disk waits, %", "produce_acksall", ("disk_wait_pct",), 1),
    ("produce acks=1: broker CPU s per GiB", "produce_acks1", ("broker_cpu_s_per_gib",), 1),
    ("consume: broker CPU s per GiB", "consume", ("broker_cpu_s_per_gib",), 1),
    ("other work on the machine during produce acks=1, cores", "produce_acks1", ("other_cores",), 2),
    ("other work on the machine during consume, cores", "consume", ("other_cores",), 2),
    ("other work on the machine during fixed rate, cores", "rate", ("other_cores",), 2),
]
LATENCY_KEYS = ("p50", "p95", "p99", "p99.9", "max")
COLORS = {BASE: "#1f77b4", OTHER: "#ff7f0e"}


def value(doc: dict, broker: str, phase: str, path: tuple, tree: str = "phases"):
    """A figure from the document (``tree="range"``: its [min, max] over the runs),
    or None when that broker/phase/figure is missing."""
    node = doc.get("brokers", {}).get(broker, {}).get(tree, {}).get(phase)
    if node is not None and path[0] in DERIVED:
        return DERIVED[path[0]](node) if tree == "phases" else None
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _cpu_per_gib(figures: dict):
    """Broker CPU seconds per GiB of record values moved (from the medians)."""
    moved = figures.get("bytes") or figures.get("records", 0) * figures.get("record_size", 0)
    cpu = figures.get("broker_cpu_s")
    return cpu / (moved / 2**30) if cpu is not None and moved else None


def _other_cores(figures: dict):
    """CPU used by neither broker nor client during the phase, in cores (noise gauge)."""
    other, wall = figures.get("machine", {}).get("other_cpu_s"), figures.get("wall_s")
    return max(0.0, other) / wall if other is not None and wall else None


def _disk_wait_pct(figures: dict):
    share = figures.get("broker_states", {}).get("disk_wait_share")
    return None if share is None else 100 * share


DERIVED = {"broker_cpu_s_per_gib": _cpu_per_gib, "other_cores": _other_cores,
           "disk_wait_pct": _disk_wait_pct}


def _fmt(v, decimals: int) -> str:
    return "—" if v is None else f"{v:,.{decimals}f}"


def _cell(doc: dict, name: str, phase: str, path: tuple, decimals: int) -> str:
    v, span = value(doc, name, phase, path), value(doc, name, phase, path, "range")
    if span is None or doc.get("settings", {}).get("repeat", 1) < 2:
        return _fmt(v, decimals)
    return f"{_fmt(v, decimals)} ({_fmt(span[0], decimals)}–{_fmt(span[1], decimals)})"


def markdown(doc: dict) -> str:
    names = _names(doc)
    lines = [f"| metric | {' | '.join(names)} | {BASE}/{OTHER} |",
             "|---|" + "---:|" * (len(names) + 1)]
    for label, phase, path, decimals in ROWS:
        cells = [_cell(doc, n, phase, path, decimals) for n in names]
        a, b = value(doc, BASE, phase, path), value(doc, OTHER, phase, path)
        ratio = f"{a / b:.2f}x" if a is not None and b else "—"
        lines.append(f"| {label} | {' | '.join(cells)} | {ratio} |")
    return "\n".join(lines + _problems(doc))


def _problems(doc: dict) -> list[str]:
    out = []
    for name, runs in doc.get("runs", {}).items():
        for i, run in enumerate(runs, 1):
            out += [f"{name} run {i}: {line}" for line in _run_problems(run)]
    return ["", *(f"- {line}" for line in out)] if out else []


def _run_problems(run: dict) -> list[str]:
    out = []
    if "start_error" in run:
        msg = [ln for ln in run["start_error"].splitlines() if ln.strip()]
        out.append(f"did not start: {msg[0]} ... {msg[-1]}")
    for phase, f in run.get("phases", {}).items():
        if f.get("failed"):
            tail = f.get("stderr_tail", "").strip().splitlines()
            out.append(f"{phase} FAILED: {tail[-1] if tail else ''}")
        elif f.get("errors"):
            out.append(f"{phase}: {f['errors']} delivery errors, first: {f.get('first_error')}")
        elif f.get("complete") is False:
            out.append(f"{phase}: read {f.get('records')} of {f.get('expected')} records")
    for inst in run.get("instances", []):
        if "died_after" in inst:
            out.append(f"broker died after {inst['died_after']}")
        if inst.get("log_problems", {}).get("count"):
            out.append(f"{inst['log_problems']['count']} warning/error lines in the broker log, "
                       f"first: {inst['log_problems']['first'][0]}")
    return out


def plot(doc: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    _throughput_panel(ax1, doc)
    _latency_panel(ax2, doc)
    m = doc.get("machine", {})
    st = doc["settings"]
    fig.suptitle(f"single node, 1 KiB records, {st['partitions']} partition(s), median of "
                 f"{st.get('repeat', 1)} run(s) (whiskers: min-max); {m.get('cpu_count')} CPUs shared "
                 f"by client, broker and other work; {m.get('date_utc', '')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _grouped_bars(ax, groups: list[str], series: dict[str, list], spans: dict[str, list]) -> None:
    """Bars at the medians, whiskers from the min to the max of the runs."""
    width = 0.8 / max(1, len(series))
    for i, (name, vals) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [v or 0 for v in vals]
        err = [[h - (s[0] if s else h) for h, s in zip(heights, spans[name])],
               [(s[1] if s else h) - h for h, s in zip(heights, spans[name])]]
        bars = ax.bar(xs, heights, width, label=name, color=COLORS.get(name), yerr=err,
                      error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.bar_label(bars, labels=[_fmt(v, 1) for v in vals], fontsize=8)
    ax.set_xticks(range(len(groups)), groups)
    ax.legend()


def _names(doc: dict) -> list[str]:
    """Brokers in a fixed order (tierlog first), whatever order they ran in."""
    return sorted(doc["brokers"], key=lambda n: (n != BASE, n))


def _throughput_panel(ax, doc: dict) -> None:
    phases = [("produce acks=1", "produce_acks1"), ("produce acks=all", "produce_acksall"),
              ("consume", "consume")]
    series = {n: [value(doc, n, p, ("mib_per_s",)) for _, p in phases] for n in _names(doc)}
    spans = {n: [value(doc, n, p, ("mib_per_s",), "range") for _, p in phases] for n in _names(doc)}
    _grouped_bars(ax, [label for label, _ in phases], series, spans)
    ax.set_ylabel("MiB/s (record values)")
    ax.set_title("throughput (closed loop)")


def _latency_panel(ax, doc: dict) -> None:
    s = doc["settings"]
    series = {n: [value(doc, n, "rate", ("latency_ms", k)) for k in LATENCY_KEYS] for n in _names(doc)}
    spans = {n: [value(doc, n, "rate", ("latency_ms", k), "range") for k in LATENCY_KEYS]
             for n in _names(doc)}
    _grouped_bars(ax, list(LATENCY_KEYS), series, spans)
    from matplotlib.ticker import ScalarFormatter
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.axhline(10, color="red", linestyle="--", linewidth=1, label="10 ms goal (p99)")
    ax.legend()
    ax.set_ylabel("ms, produce() call to delivery callback")
    ax.set_title(f"produce latency at {s['rate_mib_per_s']:g} MiB/s, acks={s['rate_acks']}, "
                 f"linger.ms={s['linger_ms']}")
