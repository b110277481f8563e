"""A leader's log dir fills up under an acks=all stream (issue 21, Kafka's JBOD handling).

1 controller + 3 brokers; the victim broker's log dir is a small tmpfs of its
own (mounted in a private mount namespace by ``unshare``, so only that node sees
it) and its metadata log lives elsewhere.  While an idempotent acks=all producer
streams to an RF 3, min.insync.replicas=2 topic that the victim leads, the test
fills the victim's file system through ``/proc/<pid>/root``: the victim's next
append hits ENOSPC, the dir goes offline, the broker reports it in
BrokerHeartbeat OfflineLogDirs, the controller fences it (one log line with the
reason) and moves leadership to an in-sync replica, the victim shuts down with a
one-line error, writes go on at the new leader and every acknowledged record is
read back.
"""
import errno
import json
import os
import shutil
import subprocess
import sys

import pytest
from clients import AckedStream, read_back
from cluster import FAST_REPLICATION, Cluster, running, wait_for
from confluent_kafka.admin import AdminClient, NewTopic

VICTIM, TOPIC = 2, "full-disk"       # node 1 is the controller, brokers 2, 3, 4
_MOUNT = 'mkdir -p "$0" && mount -t tmpfs -o size=64m tmpfs "$0" && exec "$@"'


def _can_mount_privately() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /tmp"],
                           check=False, capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _can_mount_privately(),
                                reason="needs unshare -rm and tmpfs mounts (user and mount namespaces)")


def _fill(path) -> None:
    """Write zeros into ``path`` until the file system says ENOSPC."""
    chunk = bytes(1 << 20)
    with open(path, "wb") as f:
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e


def test_a_full_log_dir_on_the_leader_moves_leadership_and_loses_no_acked_record(tmp_path):
    cluster = Cluster(tmp_path, controllers=1, brokers=3, props=FAST_REPLICATION)
    for b in cluster.brokers:
        b.props["metadata.log.dir"] = str(b.root / "metadata")
    victim = cluster.broker(VICTIM)
    victim.launcher = ["unshare", "-rm", "sh", "-c", _MOUNT, str(victim.data_dir)]
    with running(cluster):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[VICTIM, 3, 4]],
                                      config={"min.insync.replicas": "2"})],
                            request_timeout=15)[TOPIC].result(timeout=20)
        wait_for(lambda: all((ps := cluster.partitions(b, TOPIC)) and ps[0]["LeaderId"] == VICTIM
                             and len(ps[0]["IsrNodes"]) == 3 for b in cluster.brokers), 20,
                 f"{TOPIC} led by broker {VICTIM} with a full ISR everywhere")
        streamer = AckedStream(cluster.bootstrap, TOPIC, partitions=1)
        streamer.start()
        try:
            wait_for(lambda: len(streamer.acked) >= 200, 30, "the first acknowledged records")
            _fill(f"/proc/{victim.proc.pid}/root{victim.data_dir}/filler")
            before = len(streamer.acked)

            def moved():
                ps = cluster.live_partitions(TOPIC, 1)
                return ps and ps[0]["LeaderId"] in (3, 4) and VICTIM not in ps[0]["IsrNodes"]
            wait_for(moved, 30, f"a new leader without broker {VICTIM}, which left the ISR")
            wait_for(lambda: len(streamer.acked) > before + 200, 30, "acknowledgements at the new leader")
            assert victim.proc.wait(30) == 1
        finally:
            left = streamer.finish()
        assert left == 0, f"{left} records undelivered\n{cluster.logs_tail()}"
        assert not streamer.errors, streamer.errors[:5]
        acked = streamer.acked_on(0)
        read = read_back(cluster.bootstrap, TOPIC, 1)[0]
        missing = [(off, v) for off, v in acked if read.get(off) != v]
        assert not missing, f"{len(missing)} of {len(acked)} acknowledged records lost, first {missing[:5]}"

    victim_log = victim.log_path.read_text()
    assert "No space left on device" in victim_log
    assert f"tierlog: error: node {VICTIM}: every log dir failed" in victim_log
    assert "Traceback" not in victim_log
    fences = [line for line in cluster.controller(1).log_path.read_text().splitlines()
              if line.split("] ", 1)[-1].startswith(f"fencing broker {VICTIM} ")]
    assert len(fences) == 1 and "every log dir offline" in fences[0], fences


JBOD_TOPIC, JBOD_PARTITIONS = "jbod", 4
# broker 2 is a replica of every partition and leads 0 and 1; the least-loaded placement puts
# partitions 0 and 2 in its first log dir (the tmpfs) and 1 and 3 in its second (a real disk)
JBOD_ASSIGNMENT = [[VICTIM, 3, 4], [VICTIM, 4, 3], [3, VICTIM, 4], [4, VICTIM, 3]]


def _describe(bootstrap: str, topic: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "topics", "describe", topic, "--json",
                          "--bootstrap-server", bootstrap], check=True, capture_output=True, timeout=60)
    return sorted(json.loads(out.stdout)[0]["partitions"], key=lambda p: p["partition"])


def test_one_failed_dir_of_two_moves_only_its_partitions(tmp_path):
    """KIP-858: broker 2 has two log dirs; the tmpfs one fills under an acks=all stream.  Leadership of
    the partitions in it moves and broker 2 leaves their ISR; broker 2 keeps running and keeps leading
    the partition of its healthy dir; no acknowledged record is lost."""
    cluster = Cluster(tmp_path, controllers=1, brokers=3, props=FAST_REPLICATION)
    for b in cluster.brokers:
        b.props["metadata.log.dir"] = str(b.root / "metadata")
    victim = cluster.broker(VICTIM)
    healthy_dir = victim.root / "data2"
    victim.props["log.dirs"] = f"{victim.data_dir},{healthy_dir}"
    victim.launcher = ["unshare", "-rm", "sh", "-c", _MOUNT, str(victim.data_dir)]
    with running(cluster):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(JBOD_TOPIC, JBOD_PARTITIONS, replica_assignment=JBOD_ASSIGNMENT,
                                      config={"min.insync.replicas": "2"})],
                            request_timeout=15)[JBOD_TOPIC].result(timeout=20)
        wait_for(lambda: all(len(ps := cluster.partitions(b, JBOD_TOPIC)) == JBOD_PARTITIONS
                             and all(len(p["IsrNodes"]) == 3 for p in ps) for b in cluster.brokers), 20,
                 f"{JBOD_TOPIC} with full ISRs everywhere")
        tmpfs = f"/proc/{victim.proc.pid}/root{victim.data_dir}"
        on_tmpfs = {i for i in range(JBOD_PARTITIONS) if os.path.isdir(f"{tmpfs}/{JBOD_TOPIC}-{i}")}
        on_disk = {i for i in range(JBOD_PARTITIONS) if (healthy_dir / f"{JBOD_TOPIC}-{i}").is_dir()}
        assert (on_tmpfs, on_disk) == ({0, 2}, {1, 3}), (on_tmpfs, on_disk)
        streamer = AckedStream(cluster.bootstrap, JBOD_TOPIC, partitions=JBOD_PARTITIONS)
        streamer.start()
        try:
            wait_for(lambda: len(streamer.acked) >= 400, 30, "the first acknowledged records")
            _fill(f"{tmpfs}/filler")
            before = len(streamer.acked)

            def moved():
                ps = cluster.live_partitions(JBOD_TOPIC, JBOD_PARTITIONS)
                return ps and all(VICTIM not in ps[i]["IsrNodes"] and ps[i]["LeaderId"] != VICTIM for i in on_tmpfs)
            wait_for(moved, 30, f"partitions {sorted(on_tmpfs)} led elsewhere, broker {VICTIM} out of their ISR")
            wait_for(lambda: len(streamer.acked) > before + 400, 30, "acknowledgements after the failure")
            wait_for(lambda: sum(1 for p, _, _ in streamer.acked[before:] if p == 1) >= 50, 30,
                     f"acknowledgements from broker {VICTIM} for its healthy partition 1")
            ps = cluster.partitions(victim, JBOD_TOPIC)       # the victim still answers, and still leads 1
            assert ps[1]["LeaderId"] == VICTIM and VICTIM in ps[1]["IsrNodes"], ps[1]
            assert all(VICTIM in ps[i]["IsrNodes"] for i in on_disk), ps
            described = _describe(cluster.bootstrap, JBOD_TOPIC)
            for i in on_tmpfs:
                assert VICTIM not in described[i]["isr"] and described[i]["leader"] != VICTIM, described[i]
            assert described[1]["leader"] == VICTIM, described[1]
            assert victim.alive()
        finally:
            left = streamer.finish()
        assert left == 0, f"{left} records undelivered\n{cluster.logs_tail()}"
        assert not streamer.errors, streamer.errors[:5]
        read = read_back(cluster.bootstrap, JBOD_TOPIC, JBOD_PARTITIONS)
        for partition in range(JBOD_PARTITIONS):
            acked = streamer.acked_on(partition)
            missing = [(off, v) for off, v in acked if read[partition].get(off) != v]
            assert not missing, f"partition {partition}: {len(missing)} of {len(acked)} acknowledged records lost"
        assert victim.alive()

    victim_log = victim.log_path.read_text()
    assert "No space left on device" in victim_log and "every log dir failed" not in victim_log
    assert "Traceback" not in victim_log
    controller_log = cluster.controller(1).log_path.read_text()
    fences = [line for line in controller_log.splitlines() if f"fencing broker {VICTIM} " in line]
    assert all("controlled shutdown complete" in line for line in fences), fences     # only at the cluster's stop
    assert "remain online; 2 partitions with a replica there change leader or ISR" in controller_log
