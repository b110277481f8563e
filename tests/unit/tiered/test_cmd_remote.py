"""`tierlog remote ls` on stores the test builds with the backends (no broker)."""

from __future__ import annotations

import json

from tiered_helpers import TP, batches, metadata, write_segment

from tierlog.cli.main import main
from tierlog.storage import topic_id_to_str
from tierlog.tiered import (
    FsObjectStore,
    RemoteSegmentStore,
    TopicIdPartition,
    segment_key,
)

OTHER = TopicIdPartition(bytes(range(1, 17)), "clicks", 3)


def _build_store(root, tmp_path):
    rss = RemoteSegmentStore(FsObjectStore(root))
    files = write_segment(tmp_path / "local", 0, batches(0, 4))
    first = metadata(0, 19, epochs=((0, None),), size=1000)
    second = metadata(20, 39, epochs=((0, None), (2, 30)), size=1500)
    rss.copy_log_segment(first, files)
    rss.copy_log_segment(second, files)
    rss.copy_log_segment(metadata(0, 9, tp=OTHER, size=10), files)
    torn = metadata(40, 59)
    rss.store.put_file(segment_key(torn.segment_id, 40, ".log"), files.log_segment)
    return first, second, torn


def test_ls_json_lists_partitions_segments_and_unfinished_uploads(tmp_path, capsys):
    root = tmp_path / "remote"
    _first, second, torn = _build_store(root, tmp_path)
    assert main(["remote", "ls", "--storage", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["storage"] == str(root)
    assert [(p["topic"], p["partition"]) for p in doc["partitions"]] == [("clicks", 3), ("orders", 0)]
    orders = doc["partitions"][1]
    assert orders["topic_id"] == topic_id_to_str(TP.topic_id)
    assert (orders["start_offset"], orders["end_offset"], orders["size_bytes"]) == (0, 39, 2500)
    assert [(s["start_offset"], s["end_offset"], s["leader_epochs"]) for s in orders["segments"]] == \
        [(0, 19, [[0, 0]]), (20, 39, [[0, 20], [2, 30]])]
    assert orders["segments"][1]["max_timestamp_ms"] == second.max_timestamp_ms
    assert orders["unfinished"] == [{"segment_id": topic_id_to_str(torn.segment_id.id), "start_offset": 40,
                                     "objects": [".log"], "reason": "no manifest"}]


def test_ls_topic_filter_and_table(tmp_path, capsys):
    root = tmp_path / "remote"
    first, _second, _torn = _build_store(root, tmp_path)
    assert main(["remote", "ls", "--storage", str(root), "--topic", "orders"]) == 0
    out = capsys.readouterr().out
    assert "clicks" not in out
    lines = [line for line in out.splitlines() if line.strip().startswith("orders-0")]
    assert len(lines) == 3
    assert topic_id_to_str(first.segment_id.id) in lines[0] and "finished" in lines[0]
    assert "0@20 2@30" in lines[1]
    assert "unfinished (no manifest)" in lines[2]


def test_ls_on_an_empty_store_says_so(tmp_path, capsys):
    (tmp_path / "remote").mkdir()
    assert main(["remote", "ls", "--storage", str(tmp_path / "remote")]) == 0
    assert "no partitions in" in capsys.readouterr().err


def test_ls_on_a_missing_directory_is_an_error(tmp_path, capsys):
    assert main(["remote", "ls", "--storage", str(tmp_path / "nope")]) == 1
    assert "no remote storage directory" in capsys.readouterr().err


def test_ls_reads_an_s3_store(s3_settings, tmp_path, capsys):
    from tierlog.tiered import S3ObjectStore

    rss = RemoteSegmentStore(S3ObjectStore(s3_settings))
    rss.copy_log_segment(metadata(0, 19), write_segment(tmp_path / "local", 0, batches(0, 4)))
    argv = ["remote", "ls", "--storage", f"s3://{s3_settings.bucket}/{s3_settings.prefix}", "--json",
            "--set", f"rsm.config.storage.s3.endpoint.url={s3_settings.endpoint_url}",
            "--set", f"rsm.config.storage.s3.region={s3_settings.region}",
            "--set", "rsm.config.storage.s3.path.style.access.enabled=true"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(p["topic"], p["end_offset"]) for p in doc["partitions"]] == [("orders", 19)]


def test_ls_rejects_settings_that_are_not_remote_storage_settings(tmp_path, capsys):
    (tmp_path / "remote").mkdir()
    argv = ["remote", "ls", "--storage", str(tmp_path / "remote"), "--set", "remote.log.reader.threads=3"]
    assert main(argv) == 1
    assert "rsm.config.storage.* and rsm.config.encryption.* settings only" in capsys.readouterr().err


def test_ls_reports_a_bad_s3_setting_as_one_line(tmp_path, capsys):
    argv = ["remote", "ls", "--storage", "s3://bucket/p", "--set",
            "rsm.config.storage.s3.path.style.access.enabled=maybe"]
    assert main(argv) == 1
    assert "true or false" in capsys.readouterr().err


def test_verify_lists_missing_corrupt_and_gaps_and_exits_1(tmp_path, capsys):
    root = tmp_path / "remote"
    rss = RemoteSegmentStore(FsObjectStore(root))
    files = write_segment(tmp_path / "local", 0, batches(0, 4))
    segs = [metadata(0, 19), metadata(20, 39), metadata(40, 59), metadata(80, 99)]     # 60..79: gone whole
    for m in segs:
        rss.copy_log_segment(m, files)
    assert main(["remote", "verify", "--storage", str(root)]) == 1
    assert "1 problem(s) in 4 remote segment(s)" in capsys.readouterr().err    # the gap only
    (root / segment_key(segs[0].segment_id, 0, ".log")).unlink()
    index = root / segment_key(segs[1].segment_id, 20, ".index")
    index.write_bytes(b"\xff" + index.read_bytes()[1:])
    assert main(["remote", "verify", "--storage", str(root), "--topic", "orders", "--json"]) == 1
    captured = capsys.readouterr()
    problems = json.loads(captured.out)["problems"]
    assert [(p["start_offset"], p["end_offset"], p["problem"], p["object"]) for p in problems] == [
        (0, 19, "missing", segment_key(segs[0].segment_id, 0, ".log")),
        (20, 39, "corrupt", segment_key(segs[1].segment_id, 20, ".index")),
        (60, 79, "gap", None)]
    assert captured.err.startswith("tierlog: error: 3 problem(s)")
    assert main(["remote", "verify", "--storage", str(root)]) == 1
    rows = capsys.readouterr().out.splitlines()[1:]
    assert rows[0].endswith("tierlog delete-records --topic orders --partition 0 --offset 20")


def test_verify_of_a_sound_store_exits_0(tmp_path, capsys):
    root = tmp_path / "remote"
    _build_store(root, tmp_path)            # an unfinished upload is not data loss
    assert main(["remote", "verify", "--storage", str(root)]) == 0
    assert "3 remote segment(s) in 2 partition(s) verified, no problem" in capsys.readouterr().err


def test_data_loss_counts_each_segment_once():
    from tierlog.tiered import LossKind, RemoteDataLoss
    loss = RemoteDataLoss()
    assert loss.report("a", LossKind.MISSING) and not loss.report("a", LossKind.MISSING)
    assert loss.report("b", LossKind.CORRUPT) and not loss.report("b", LossKind.MISSING)
    assert (loss.missing_segments, loss.corrupt_segments, loss.lost_segments) == (1, 1, 2)


# --- encrypted stores ---------------------------------------------------------------------------

def _encrypted_store(root, tmp_path):
    """Two segments under key k1, one under k2 (rotated); returns the key files."""
    import base64
    import os

    from tierlog.tiered import EncryptionSettings, KeyRing

    k1, k2 = os.urandom(32), os.urandom(32)
    (tmp_path / "k1.key").write_text(base64.b64encode(k1).decode())
    (tmp_path / "k2.key").write_text(k2.hex())
    (tmp_path / "wrong.key").write_text(base64.b64encode(os.urandom(32)).decode())
    files = write_segment(tmp_path / "local", 0, batches(0, 4))
    segs = [metadata(0, 19), metadata(20, 39), metadata(40, 59)]
    old = RemoteSegmentStore(FsObjectStore(root), EncryptionSettings(KeyRing({"k1": k1}, "k1"), 4096))
    new = RemoteSegmentStore(FsObjectStore(root), EncryptionSettings(KeyRing({"k1": k1, "k2": k2}, "k2"), 4096))
    old.copy_log_segment(segs[0], files)
    old.copy_log_segment(segs[1], files)
    new.copy_log_segment(segs[2], files)
    return segs, {name: str(tmp_path / f"{name}.key") for name in ("k1", "k2", "wrong")}


def test_ls_of_an_encrypted_store_needs_no_key_and_names_each_segments_key(tmp_path, capsys):
    root = tmp_path / "remote"
    _encrypted_store(root, tmp_path)
    assert main(["remote", "ls", "--storage", str(root), "--json"]) == 0
    [orders] = json.loads(capsys.readouterr().out)["partitions"]
    assert [s["key_id"] for s in orders["segments"]] == ["k1", "k1", "k2"]
    assert main(["remote", "ls", "--storage", str(root)]) == 0
    assert "finished (key k2)" in capsys.readouterr().out


def test_verify_of_an_encrypted_store_needs_its_keys(tmp_path, capsys):
    root = tmp_path / "remote"
    _segs, keys = _encrypted_store(root, tmp_path)
    assert main(["remote", "verify", "--storage", str(root)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "encrypted under key(s) k1, k2" in err and "--key-file" in err
    assert main(["remote", "verify", "--storage", str(root), "--key-file", f"k1={keys['k1']}"]) == 1
    assert "key(s) k2" in capsys.readouterr().err
    argv = ["remote", "verify", "--storage", str(root), "--key-file", f"k1={keys['wrong']}",
            "--key-file", f"k2={keys['k2']}"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "key 'k1' does not open remote segment 0 of orders-0 (the wrong key?)" in err
    argv = ["remote", "verify", "--storage", str(root), "--key-file", f"k1={keys['k1']}",
            "--set", f"rsm.config.encryption.keys.k2.file={keys['k2']}"]
    assert main(argv) == 0
    assert "3 remote segment(s) in 1 partition(s) verified, no problem" in capsys.readouterr().err
    assert main(["remote", "verify", "--storage", str(root), "--key-file", "k1=/nonexistent"]) == 1
    assert "cannot read key 'k1' from /nonexistent" in capsys.readouterr().err


def test_verify_with_the_keys_finds_an_altered_chunk_whose_crc_was_rewritten(tmp_path, capsys):
    from crc32c import crc32c

    from tierlog.tiered.encryption import HEADER_BYTES

    root = tmp_path / "remote"
    segs, keys = _encrypted_store(root, tmp_path)
    path = root / segment_key(segs[1].segment_id, 20, ".log")
    stored = bytearray(path.read_bytes())
    stored[HEADER_BYTES + 40] ^= 0x01
    path.write_bytes(bytes(stored))
    manifest_path = root / segment_key(segs[1].segment_id, 20, ".manifest")       # a careful attacker
    doc = json.loads(manifest_path.read_bytes())
    doc["objects"][".log"]["crc32c"] = crc32c(bytes(stored))
    manifest_path.write_text(json.dumps(doc))
    argv = ["remote", "verify", "--storage", str(root), "--json", "--key-file", f"k1={keys['k1']}",
            "--key-file", f"k2={keys['k2']}"]
    assert main(argv) == 1
    [problem] = json.loads(capsys.readouterr().out)["problems"]
    assert (problem["start_offset"], problem["problem"], problem["object"]) == \
        (20, "corrupt", segment_key(segs[1].segment_id, 20, ".log"))
    assert "chunk 0 fails authentication" in problem["detail"]
