"""Remote storage encrypted at rest: consuming from an encrypted remote store against a plain one.

    python bench/tiered_encryption.py                    # 256 MiB per run, 2 rounds, fs remote storage
    python bench/tiered_encryption.py --mib 64 --rounds 1   # smoke run

Per round, two single-node tierlog runs one after the other, identical but for
``rsm.config.encryption.enabled`` (key from a file, 64 KiB chunks): produce
``--mib`` of 1 KiB records (acks=1) to a tiered topic (16 MiB segments, local
retention 10 % of the data), wait until ~90 % of it lives only in remote storage,
then consume it from offset 0 (``bench/workload.py consume``): the first reader's
MiB/s (every remote chunk GET and, when encrypted, decrypted) and a second
reader's (served from the broker's chunk cache, which holds plaintext). The
figure of merit is the first reader's encrypted / plain ratio (goal >= 0.8x);
the median over the rounds is reported. Also measured in this process: the
format's own encrypt and decrypt MiB/s (``tiered.encryption``, one 64 MiB object).

Writes ``results/tiered_encryption_<timestamp>.json``, ``..._latest.json`` and
``results/tiered_encryption.png`` (``--plot-only`` redraws it from the latest JSON).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from brokers import start_broker
from machine import facts as machine_facts
from tiered import _consume, _delta, _remote_stats, _wait_mostly_remote, _workload

from tierlog.tiered.encryption import (
    CHUNK_SIZE_DEFAULT,
    KeyRing,
    ObjectContext,
    ObjectDecryptor,
    ObjectEncryptor,
    ObjectHeader,
    new_data_key,
)

MIB = 1 << 20
RECORD_SIZE = 1024
SEGMENT_BYTES = 16 * MIB


def run_once(encrypted: bool, args, workdir: Path) -> dict:
    props = {"remote.log.storage.system.enable": "true", "remote.log.manager.task.interval.ms": "1000",
             "log.retention.check.interval.ms": "1000", "log.segment.delete.delay.ms": "1000",
             "rsm.config.storage.backend": "fs", "rsm.config.storage.root": str(workdir / "remote")}
    if encrypted:
        key_file = workdir / "k1.key"
        key_file.write_text(base64.b64encode(os.urandom(32)).decode())
        props.update({"rsm.config.encryption.enabled": "true", "rsm.config.encryption.key.id": "k1",
                      "rsm.config.encryption.key.file": str(key_file)})
    broker = start_broker("tierlog", workdir / "node", props=props)
    try:
        records = int(args.mib * MIB / RECORD_SIZE)
        config = [f"--topic-config={k}={v}" for k, v in (
            ("remote.storage.enable", "true"), ("segment.bytes", SEGMENT_BYTES),
            ("local.retention.bytes", int(args.mib * MIB * 0.1)))]
        _workload("produce", "--bootstrap", broker.bootstrap, "--topic", "tiered", "--create", "--records",
                  str(records), "--acks", "1", *config)
        placement = _wait_mostly_remote(broker, "tiered")
        before = _remote_stats(broker)
        first = _consume(broker, "tiered")
        middle = _remote_stats(broker)
        second = _consume(broker, "tiered")
        after = _remote_stats(broker)
    finally:
        broker.stop()
    stored = sum(p.stat().st_size for p in (workdir / "remote").rglob("*.log"))
    return {"encrypted": encrypted, "placement": placement, "remote_log_bytes": stored,
            "first": {**first, "remote": _delta(middle, before)}, "second": {**second, "remote": _delta(after, middle)}}


def format_speed(size_mib: int = 64, piece_mib: int = 4) -> dict:
    """MiB/s of the format alone in this process: encrypting one object chunk by chunk (as an upload
    does) and decrypting it in ``piece_mib`` ranges (as the broker's chunk cache reads), next to raw
    AES-256-GCM over the same chunks (results dropped as they come: the figures are the cipher's and
    the framing's, not the allocator's)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    data = os.urandom(size_mib * MIB)
    keys, ctx = KeyRing({"k1": os.urandom(32)}, "k1"), ObjectContext(os.urandom(16), ".log")
    view, nonce, raw_aead = memoryview(data), os.urandom(12), AESGCM(os.urandom(32))
    start = time.perf_counter()
    for at in range(0, len(data), CHUNK_SIZE_DEFAULT):
        raw_aead.encrypt(nonce, view[at:at + CHUNK_SIZE_DEFAULT], b"aad")
    raw_s = time.perf_counter() - start
    enc = ObjectEncryptor(keys, new_data_key(), ctx, len(data), CHUNK_SIZE_DEFAULT)
    start = time.perf_counter()
    for _ in enc.chunks(data):
        pass
    encrypt_s = time.perf_counter() - start
    stored = enc.header() + b"".join(enc.chunks(data))
    dec = ObjectDecryptor(keys, ObjectHeader.parse(stored), ctx)
    start = time.perf_counter()
    for at in range(0, len(data), piece_mib * MIB):
        first, s_start, s_end = dec.layout.span(at, at + piece_mib * MIB)
        dec.decrypt(memoryview(stored)[s_start:s_end], first, at, at + piece_mib * MIB)
    decrypt_s = time.perf_counter() - start
    return {"mib": size_mib, "raw_aes_gcm_mib_per_s": round(size_mib / raw_s, 1),
            "encrypt_mib_per_s": round(size_mib / encrypt_s, 1),
            "decrypt_mib_per_s": round(size_mib / decrypt_s, 1),
            "overhead_pct": round(100 * (len(stored) - len(data)) / len(data), 3)}


def _summary(runs: list[dict]) -> dict:
    def median(encrypted: bool, reader: str) -> float:
        return round(statistics.median(r[reader]["mib_per_s"] for r in runs if r["encrypted"] == encrypted), 1)
    plain, sealed = median(False, "first"), median(True, "first")
    return {"plain_first_mib_per_s": plain, "encrypted_first_mib_per_s": sealed,
            "plain_second_mib_per_s": median(False, "second"), "encrypted_second_mib_per_s": median(True, "second"),
            "encrypted_vs_plain_first": round(sealed / plain, 2)}


def plot(doc: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{'encrypted' if r['encrypted'] else 'plain'} #{i // 2 + 1}" for i, r in enumerate(doc["runs"])]
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], [r["first"]["mib_per_s"] for r in doc["runs"]], 0.4, label="1st reader (GET)")
    ax.bar([x + 0.2 for x in xs], [r["second"]["mib_per_s"] for r in doc["runs"]], 0.4,
           label="2nd reader (chunk cache)")
    ax.set_xticks(list(xs), labels)
    ax.set_ylabel("MiB/s consumed from offset 0")
    ax.set_title(f"remote reads, plain vs encrypted (median 1st-reader ratio "
                 f"{doc['summary']['encrypted_vs_plain_first']}x)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=float, default=256.0, help="data per run (default 256 MiB)")
    p.add_argument("--rounds", type=int, default=2, help="plain + encrypted runs, alternating (default 2)")
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--plot-only", action="store_true", help="redraw the plot from the latest JSON")
    args = p.parse_args(argv)
    if args.plot_only:
        plot(json.loads((args.out / "tiered_encryption_latest.json").read_text()), args.out / "tiered_encryption.png")
        return 0
    runs = []
    for _ in range(args.rounds):
        for encrypted in (False, True):
            with tempfile.TemporaryDirectory(prefix="tierlog-bench-encryption-") as tmp:
                runs.append(run_once(encrypted, args, Path(tmp)))
                r = runs[-1]
                print(f"{'encrypted' if encrypted else 'plain':9s}  1st reader {r['first']['mib_per_s']:.1f} MiB/s "
                      f"({r['first']['remote']['gets']} GETs)  2nd reader {r['second']['mib_per_s']:.1f} MiB/s  "
                      f"remote .log bytes {r['remote_log_bytes']}", flush=True)
    doc = {"machine": machine_facts(), "args": {k: str(v) for k, v in vars(args).items()},
           "format": format_speed(), "runs": runs}
    doc["summary"] = _summary(runs)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    for name in (f"tiered_encryption_{stamp}.json", "tiered_encryption_latest.json"):
        (args.out / name).write_text(json.dumps(doc, indent=1))
    plot(doc, args.out / "tiered_encryption.png")
    print(json.dumps({"format": doc["format"], "summary": doc["summary"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
