"""The Jepsen-style checker over sockets (issue 23 item 6), short and seeded: three confluent-kafka
transactional producers and two read_committed group consumers on an RF 3 topic of a 1 controller +
3 broker cluster, while a partition leader, a transaction coordinator and the group coordinator are
each killed -9 and restarted once (tests/support/txn_workload.py); then txn_anomalies.check finds
no lost write, duplicate, aborted read, torn transaction, non-monotonic or skipping poll,
inconsistent offset or lost offset commit.  ``bench/txn_checker.py`` runs the long version."""
from __future__ import annotations

import pytest
import txn_workload
from cluster import FAST_REPLICATION, Cluster, running
from txn_anomalies import check, counts

pytestmark = pytest.mark.integration

SEED = 23


def test_no_anomaly_while_leaders_and_coordinators_are_killed(tmp_path):
    with running(Cluster(tmp_path, controllers=1, brokers=3,
                         props={**FAST_REPLICATION, **txn_workload.CLUSTER_PROPS})) as cluster:
        result = txn_workload.run(cluster, "jepsen", SEED, seconds=10, faults_min=len(txn_workload.KINDS))
        logs = cluster.logs_tail(20)
    assert not result.errors, result.errors
    h = result.history
    outcomes = counts_of(t.outcome for t in h.txns)
    summary = f"outcomes {outcomes}, faults {result.faults}, sessions {len(h.sessions)}"
    # the run did what it is for: each fault kind once, commits and aborts, group sessions that read
    assert sorted(f.kind for f in result.faults) == sorted(txn_workload.KINDS), summary
    assert outcomes.get("commit", 0) >= 10 and outcomes.get("abort", 0) >= 3, summary
    assert sum(1 for s in h.sessions[:-1] if s.reads) >= 2 and h.sessions[-1].reads, summary
    anomalies = check(h)
    assert anomalies == [], f"{counts(anomalies)}\n{anomalies[:10]}\n{summary}\n{logs}"


def counts_of(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out
