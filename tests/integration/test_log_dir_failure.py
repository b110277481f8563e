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
import shutil
import subprocess

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
