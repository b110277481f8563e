"""A replica moves to another log dir of its broker while it serves (AlterReplicaLogDirs, issue 38).

1 controller + 1 broker with two log dirs; an idempotent acks=all confluent-kafka
producer streams to both partitions of a topic while ``tierlog reassign
--execute`` with a plan whose ``log_dirs`` names the other dir moves partition 0
there; ``tierlog reassign --verify`` polls until the move is complete.  Then
every acknowledged record reads back, ``tierlog log-dirs describe`` shows the
partition in the new dir only (no future log), the old directory is gone, and
after a restart the partition is still there and still reads back.  A plan
naming a dir the broker does not have is refused with LOG_DIR_NOT_FOUND.
"""
import json
import subprocess
import sys

import pytest
from clients import AckedStream, read_back
from cluster import FAST_REPLICATION, Cluster, running, wait_for
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.integration

TOPIC, PARTITIONS, BROKER = "moving", 2, 2


def _cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tierlog.cli.main", *args, "--bootstrap-server", bootstrap],
                          check=False, capture_output=True, text=True, timeout=60)


def _where(bootstrap: str) -> dict[tuple[int, bool], list[str]]:
    """(partition of TOPIC, is future) -> the log dirs holding it, from `tierlog log-dirs describe`."""
    out = _cli(bootstrap, "log-dirs", "describe", "--topic-list", TOPIC, "--json")
    assert out.returncode == 0, out.stderr
    found: dict[tuple[int, bool], list[str]] = {}
    for d in json.loads(out.stdout)["brokers"][0]["logDirs"]:
        for p in d["partitions"]:
            found.setdefault((int(p["partition"].rsplit("-", 1)[1]), p["isFuture"]), []).append(d["logDir"])
    return found


def _plan(tmp_path, name: str, log_dir: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "replicas": [BROKER], "log_dirs": [log_dir]}]}))
    return str(path)


def _check_read_back(bootstrap: str, streamer: AckedStream) -> None:
    read = read_back(bootstrap, TOPIC, PARTITIONS)
    for partition in range(PARTITIONS):
        acked = streamer.acked_on(partition)
        missing = [(off, v) for off, v in acked if read[partition].get(off) != v]
        assert acked and not missing, f"partition {partition}: {len(missing)} of {len(acked)} acknowledged lost"


def test_a_partition_moves_to_the_other_log_dir_under_an_acks_all_stream(tmp_path):
    cluster = Cluster(tmp_path, controllers=1, brokers=1,
                      props={**FAST_REPLICATION, "log.segment.delete.delay.ms": "0"})
    broker = cluster.broker(BROKER)
    dirs = [broker.data_dir.absolute(), (broker.root / "data2").absolute()]
    broker.props["log.dirs"] = ",".join(map(str, dirs))
    broker.props["metadata.log.dir"] = str(broker.root / "metadata")
    with running(cluster):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        wait_for(lambda: len(cluster.partitions(broker, TOPIC)) == PARTITIONS, 20, f"{TOPIC} known")
        before = _where(cluster.bootstrap)
        source = before[(0, False)][0]
        target = next(str(d) for d in dirs if str(d) != source)
        bad = _cli(cluster.bootstrap, "reassign", "--execute", "--reassignment-json-file",
                   _plan(tmp_path, "bad.json", str(tmp_path / "no-such-dir")))
        assert bad.returncode == 1 and "LOG_DIR_NOT_FOUND" in bad.stderr, bad.stderr + bad.stdout

        streamer = AckedStream(cluster.bootstrap, TOPIC, partitions=PARTITIONS)
        streamer.start()
        try:
            wait_for(lambda: len(streamer.acked) >= 3000, 60, "3000 acknowledged records before the move")
            plan = _plan(tmp_path, "plan.json", target)
            started = _cli(cluster.bootstrap, "reassign", "--execute", "--reassignment-json-file", plan)
            assert started.returncode == 0, started.stderr + started.stdout
            assert "Successfully started log directory move(s) for: moving-0 on broker 2" in started.stdout

            def done():
                verified = _cli(cluster.bootstrap, "reassign", "--verify", "--reassignment-json-file", plan)
                assert verified.returncode in (0, 3), verified.stderr + verified.stdout
                return verified.returncode == 0 and verified
            verified = wait_for(done, 60, "the move verified complete", interval_s=0.5)
            assert f"Reassignment of replica moving-0 on broker 2 to {target} is complete." in verified.stdout
            moved_at = len(streamer.acked)
            wait_for(lambda: sum(1 for p, _, _ in streamer.acked[moved_at:] if p == 0) >= 200, 60,
                     "acknowledgements for partition 0 from its new dir")
        finally:
            left = streamer.finish()
        assert left == 0 and not streamer.errors, (left, streamer.errors[:5], cluster.logs_tail())
        _check_read_back(cluster.bootstrap, streamer)
        after = _where(cluster.bootstrap)
        assert after[(0, False)] == [target] and (0, True) not in after, after
        assert after[(1, False)] == before[(1, False)]
        wait_for(lambda: not any(p.name.startswith(f"{TOPIC}-0") for p in (broker.root / source).iterdir()), 30,
                 f"{TOPIC}-0 gone from {source}")

        broker.restart()
        wait_for(lambda: len(cluster.partitions(broker, TOPIC)) == PARTITIONS, 30, f"{TOPIC} served again")
        assert _where(cluster.bootstrap)[(0, False)] == [target]
        _check_read_back(cluster.bootstrap, streamer)
    assert "Traceback" not in broker.log_path.read_text()
