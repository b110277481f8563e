"""Facts about the machine and software a benchmark ran on, for its results file."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import brokers
import confluent_kafka

__all__ = ["facts", "loadavg"]

REPO = Path(__file__).resolve().parent.parent


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _mem_total_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    return 0.0


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def _tansu_version() -> str | None:
    """Tansu's version, None when it is not installed (benchmarks of tierlog alone do not need it)."""
    try:
        return brokers.tansu_version()
    except brokers.BrokerStartError:
        return None


def facts() -> dict:
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "mem_total_gib": _mem_total_gib(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "confluent_kafka": confluent_kafka.version()[0] if isinstance(confluent_kafka.version(), tuple)
        else confluent_kafka.version(),
        "librdkafka": confluent_kafka.libversion()[0],
        "tansu": _tansu_version(),
        "tierlog_commit": _git("rev-parse", "--short", "HEAD"),
        "tierlog_dirty": bool(_git("status", "--porcelain", "--", "src")),
        "loadavg_start": loadavg(),
    }
