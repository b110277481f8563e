"""``LeaderTicker``: a tick visits the active led partitions (and a slice of the rest), applies
what each tick changed, drops the quiet ones from the active set and marks for followers a
partition whose ISR lacks a replica."""
from leaders import NOW, lead

from tierlog.broker.leader_ticker import LeaderTicker
from tierlog.broker.partition import Partition
from tierlog.storage import Log, LogConfig


def _partition(tmp_path, index: int, isr=(1, 2)) -> Partition:
    log = Log.open(tmp_path / f"t-{index}", LogConfig.from_props({}), NOW)
    part = Partition("t", index, b"\x01" * 16, log, leader_id=1, leader_epoch=1)
    lead(part, replicas=(1, 2), isr=isr)
    return part


def test_a_tick_visits_active_leaders_until_they_are_quiet(tmp_path):
    settled, lacking = _partition(tmp_path, 0), _partition(tmp_path, 1, isr=(1,))
    settled.on_follower_fetch(2, 0, NOW)            # the follower holds the (empty) log
    partitions = {p.key: p for p in (settled, lacking)}
    applied, marked = {}, []
    ticker = LeaderTicker(partitions, lambda part, upd: applied.__setitem__(part.key, upd),
                          lambda part: marked.append(part.key))
    ticker.activate(settled.key)
    ticker.activate(lacking.key)
    ticker.tick(NOW + 200)
    assert set(applied) == {("t", 0), ("t", 1)}
    report = applied[("t", 0)].alter_partition      # KIP-1303: the first local-log report is due
    assert report is not None and ticker.active == {("t", 0), ("t", 1)}
    assert marked == [("t", 1)]                 # its follower's next fetch reads it (ISR expand)
    settled.on_alter_partition_response(report, 0, 1, 1, (1, 2), NOW + 201)
    ticker.tick(NOW + 400)
    assert ticker.active == {("t", 1)}          # t-0: a full ISR holding the whole log, nothing to send
    for p in (settled, lacking):
        p.log.close()


def test_a_partition_gone_or_not_led_leaves_the_active_set(tmp_path):
    part = _partition(tmp_path, 0, isr=(1,))
    partitions = {part.key: part}
    ticker = LeaderTicker(partitions, lambda p, u: None, lambda p: None)
    ticker.activate(("t", 9))
    ticker.activate(part.key)
    part.become_follower(2, 2)
    ticker.tick(NOW + 200)
    assert ticker.active == frozenset()
    part.log.close()
