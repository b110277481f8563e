"""A broker's log dirs fill up, one after the other, under an acks=all stream (issue 21,
Kafka's JBOD handling, KIP-858).

1 controller + 3 brokers; the victim broker has two log dirs, each a small tmpfs
of its own (mounted in a private mount namespace by ``unshare``, so only that
node sees them); its metadata log lives elsewhere.  An idempotent acks=all
producer streams to an RF 3, min.insync.replicas=2 topic of 4 partitions, each
with a replica on the victim, which leads partitions 0 and 1; the least-loaded
placement puts partitions 0 and 2 in its first dir and 1 and 3 in its second, and
the broker tells the controller so (AssignReplicasToDirs).  The test fills the
file systems through ``/proc/<pid>/root``:

1. The first dir: the victim's next write there hits ENOSPC, the dir goes
   offline, the broker reports it in BrokerHeartbeat OfflineLogDirs, and the
   controller moves exactly the replicas in that dir: partition 0 gets a new
   leader, the victim leaves the ISR of 0 and 2 (Metadata and ``tierlog topics
   describe`` show it), while the victim keeps running and keeps leading
   partition 1 from its healthy dir (acknowledgements from it go on).
2. The second dir: every dir has failed, so the controller fences the victim
   (one log line with the reason), leadership of partition 1 moves, and the
   victim shuts down with a one-line error.

Writes go on at the new leaders and every acknowledged record is read back.
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

VICTIM, TOPIC, PARTITIONS = 2, "full-disk", 4       # node 1 is the controller, brokers 2, 3, 4
ASSIGNMENT = [[VICTIM, 3, 4], [VICTIM, 4, 3], [3, VICTIM, 4], [4, VICTIM, 3]]
# mount a 64 MiB tmpfs on each of the two dirs, then run the node
_MOUNT = ('for d in "$0" "$1"; do mkdir -p "$d" && mount -t tmpfs -o size=64m tmpfs "$d" || exit 1; done; '
          'shift; exec "$@"')


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


def _describe(bootstrap: str, topic: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "tierlog.cli.main", "topics", "describe", topic, "--json",
                          "--bootstrap-server", bootstrap], check=True, capture_output=True, timeout=60)
    return sorted(json.loads(out.stdout)[0]["partitions"], key=lambda p: p["partition"])


def test_failed_log_dirs_move_their_partitions_then_the_broker_stops(tmp_path):
    cluster = Cluster(tmp_path, controllers=1, brokers=3, props=FAST_REPLICATION)
    for b in cluster.brokers:
        b.props["metadata.log.dir"] = str(b.root / "metadata")
    victim = cluster.broker(VICTIM)
    dir_a, dir_b = victim.data_dir, victim.root / "data2"
    victim.props["log.dirs"] = f"{dir_a},{dir_b}"
    victim.launcher = ["unshare", "-rm", "sh", "-c", _MOUNT, str(dir_a), str(dir_b)]
    with running(cluster):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, replica_assignment=ASSIGNMENT,
                                      config={"min.insync.replicas": "2"})],
                            request_timeout=15)[TOPIC].result(timeout=20)
        wait_for(lambda: all(len(ps := cluster.partitions(b, TOPIC)) == PARTITIONS
                             and all(len(p["IsrNodes"]) == 3 for p in ps) for b in cluster.brokers), 20,
                 f"{TOPIC} with full ISRs everywhere")
        root = f"/proc/{victim.proc.pid}/root"
        on = {d: {i for i in range(PARTITIONS) if os.path.isdir(f"{root}{d}/{TOPIC}-{i}")} for d in (dir_a, dir_b)}
        assert (on[dir_a], on[dir_b]) == ({0, 2}, {1, 3}), on
        streamer = AckedStream(cluster.bootstrap, TOPIC, partitions=PARTITIONS)
        streamer.start()
        try:
            wait_for(lambda: len(streamer.acked) >= 400, 30, "the first acknowledged records")
            _partial_failure(cluster, victim, streamer, f"{root}{dir_a}")
            _fill(f"{root}{dir_b}/filler")          # the last healthy dir: the broker must go
            before = len(streamer.acked)
            wait_for(lambda: (ps := cluster.live_partitions(TOPIC, PARTITIONS))
                     and all(p["LeaderId"] != VICTIM and VICTIM not in p["IsrNodes"] for p in ps), 30,
                     f"every partition led elsewhere, broker {VICTIM} out of every ISR")
            wait_for(lambda: sum(1 for p, _, _ in streamer.acked[before:] if p == 1) >= 50, 30,
                     "acknowledgements for partition 1 at its new leader")
            assert victim.proc.wait(30) == 1
        finally:
            left = streamer.finish()
        assert left == 0, f"{left} records undelivered\n{cluster.logs_tail()}"
        assert not streamer.errors, streamer.errors[:5]
        read = read_back(cluster.bootstrap, TOPIC, PARTITIONS)
        for partition in range(PARTITIONS):
            acked = streamer.acked_on(partition)
            missing = [(off, v) for off, v in acked if read[partition].get(off) != v]
            assert not missing, f"partition {partition}: {len(missing)} of {len(acked)} acknowledged records lost"

    victim_log = victim.log_path.read_text()
    assert "No space left on device" in victim_log
    assert f"tierlog: error: node {VICTIM}: every log dir failed" in victim_log
    assert "Traceback" not in victim_log
    controller_log = cluster.controller(1).log_path.read_text()
    assert "remain online; 2 partitions with a replica there change leader or ISR" in controller_log
    fences = [line for line in controller_log.splitlines()
              if line.split("] ", 1)[-1].startswith(f"fencing broker {VICTIM} ")]
    assert len(fences) == 1 and "every log dir offline" in fences[0], fences


def _partial_failure(cluster: Cluster, victim, streamer: AckedStream, first_dir: str) -> None:
    """Fill the victim's first dir: partitions 0 and 2 lose its replica, it keeps leading 1."""
    _fill(f"{first_dir}/filler")
    before = len(streamer.acked)

    def moved():
        ps = cluster.live_partitions(TOPIC, PARTITIONS)
        return ps and ps[0]["LeaderId"] != VICTIM and all(VICTIM not in ps[i]["IsrNodes"] for i in (0, 2))
    wait_for(moved, 30, f"partition 0 led elsewhere, broker {VICTIM} out of the ISR of 0 and 2")
    wait_for(lambda: sum(1 for p, _, _ in streamer.acked[before:] if p == 1) >= 50, 30,
             f"acknowledgements from broker {VICTIM} for partition 1, in its healthy dir")
    ps = cluster.partitions(victim, TOPIC)          # the victim still answers, and still leads 1
    assert ps[1]["LeaderId"] == VICTIM and all(VICTIM in ps[i]["IsrNodes"] for i in (1, 3)), ps
    described = _describe(cluster.bootstrap, TOPIC)
    assert all(VICTIM not in described[i]["isr"] for i in (0, 2)) and described[0]["leader"] != VICTIM, described
    assert described[1]["leader"] == VICTIM, described
    assert victim.alive()
