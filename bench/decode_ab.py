"""Fetched record batches to Arrow (``records.arrow_records.decode_fetched``): a git revision's decoder
against the working tree's, alternated in one process on the same chunks (A B A B ...).

    .venv/bin/python bench/decode_ab.py                 # HEAD vs the working tree
    .venv/bin/python bench/decode_ab.py --base HEAD~1   # a commit vs the working tree

What each Spark read task runs per fetch answer or remote chunk (CRC-32C, record bounds, Arrow
columns), without Spark or a broker. Chunks of about 8 MiB (a fetch's ``fetch.max.bytes``, a direct
read's ranged GET): keyless 1 KiB values in batches of 1,000 (``spark_read.py``'s topic) and keyed
values of 100-2,000 bytes in batches of 16 (a producer's default 16 KiB ``batch.size``), and keyed
values of 20-100 bytes in batches of 500 (small events, a long linger). Every round
checks that both decoders give equal batches. MiB per CPU second of chunk bytes (process time,
not wall time: the machine is shared), best and median of the rounds.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULE = "src/tierlog/records/arrow_records.py"
CHUNK = 8 * 1024 * 1024


def load_at(rev: str):
    """The decoder module as it was at ``rev`` (its imports resolve to the working tree's package)."""
    text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{MODULE}"], check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="decode-ab-")) / "arrow_records_base.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("arrow_records_base", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chunk(keyed: bool, batch_records: int, sizes) -> tuple[bytes, int]:
    """About ``CHUNK`` bytes of uncompressed batches from offset 0, and the offset after them."""
    from tierlog.records.builder import build_batch
    from tierlog.records.record import Record

    out, offset = bytearray(), 0
    while len(out) < CHUNK:
        records = [Record(offset + i, 1_700_000_000_000 + i, f"key-{offset + i}".encode() if keyed else None,
                          os.urandom(sizes())) for i in range(batch_records)]
        out += build_batch(records, base_offset=offset)
        offset += batch_records
    return bytes(out), offset


def timed(decode, data: bytes, end: int):
    """CPU seconds of one decode (this process's: on a loaded machine, wall time is mostly others') and its batch."""
    t = time.process_time()
    batch = decode(data, "t", 0, 0, end).batch
    return time.process_time() - t, batch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from tierlog.records.arrow_records import decode_fetched

    base = load_at(args.base).decode_fetched
    rng = random.Random(25)
    cases = {"keyless 1 KiB, 1000 a batch": chunk(False, 1000, lambda: 1024),
             "keyed 100-2000 B, 16 a batch": chunk(True, 16, lambda: rng.randint(100, 2000)),
             "keyed 20-100 B, 500 a batch": chunk(True, 500, lambda: rng.randint(20, 100))}
    print(f"load average {os.getloadavg()[0]:.1f}; A = {args.base}, B = working tree")
    for name, (data, end) in cases.items():
        times: dict[str, list[float]] = {"A": [], "B": []}
        for _ in range(args.rounds):
            dt_a, batch_a = timed(base, data, end)
            dt_b, batch_b = timed(decode_fetched, data, end)
            assert batch_a.equals(batch_b), name
            times["A"].append(dt_a)
            times["B"].append(dt_b)
        mib = len(data) / 2**20
        best = {k: mib / min(v) for k, v in times.items()}
        median = {k: mib / statistics.median(v) for k, v in times.items()}
        print(f"{name}: A {best['A']:.0f} / B {best['B']:.0f} MiB per CPU s best ({best['B'] / best['A']:.2f}x), "
              f"A {median['A']:.0f} / B {median['B']:.0f} median ({median['B'] / median['A']:.2f}x)")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
