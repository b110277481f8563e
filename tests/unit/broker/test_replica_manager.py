"""``ReplicaManager`` as the executor of what partitions return: the waiters a partition completes
are answered, a moved high watermark wakes parked fetches, losing leadership fails what waits and
tells the listeners; a failed log dir's partitions stay unhosted, and so does a new one when no
log dir is online."""
import asyncio
from types import SimpleNamespace

from follow_fakes import Fetchers, Listener
from storage_helpers import NOW, batch, config

from tierlog.broker.partition import AppendOrigin
from tierlog.broker.replica_manager import ReplicaManager
from tierlog.metadata import TopicInfo
from tierlog.metadata.image import PartitionInfo
from tierlog.protocol.errors import ErrorCode
from tierlog.storage import LogManager

TOPIC_ID = bytes(range(16))
KEY = ("t", 0)


class FetcherTasks:
    def sync(self):
        pass

    async def stop_all(self):
        pass


def _manager(tmp_path):
    logs = LogManager([tmp_path], NOW)
    rm = ReplicaManager(1, logs, {}, lambda: NOW, controller_channel=None, broker_epoch=lambda: 1,
                        image_fn=lambda: None)
    rm.fetchers = rm.transitions.fetchers = Fetchers()
    rm.fetcher_tasks = FetcherTasks()
    listener = Listener()
    rm.add_leadership_listener(listener)
    return rm, listener


def _host(rm, leader, epoch, isr=(1, 2)):
    topic = TopicInfo("t", TOPIC_ID, (PartitionInfo(0, leader, epoch, (1, 2), isr, partition_epoch=epoch),))
    image = SimpleNamespace(brokers={1: SimpleNamespace(usable=True), 2: SimpleNamespace(usable=True)},
                            topics={"t": topic}, config=lambda name, t, default: default)
    rm.host(image, topic, topic.partitions[0], config(**{"min.insync.replicas": "2"}))
    return rm.get(*KEY)


def test_a_parked_acks_all_append_is_answered_once_the_follower_has_it(tmp_path):
    rm, listener = _manager(tmp_path)

    async def scenario():
        part = _host(rm, leader=1, epoch=1)
        outcome, waiter = rm.append_records(part, batch(3), AppendOrigin.CLIENT, -1, 30_000)
        assert outcome.appended and waiter is not None and not waiter.done()
        parked_fetch = asyncio.ensure_future(rm.fetch_purgatory.wait([KEY], 30))
        await asyncio.sleep(0)
        fetched = SimpleNamespace(fetch_offset=3, log_start_offset=0, local_log_start_timestamp=-1,
                                  local_log_size_bytes=-1)
        moved = []
        assert rm.on_follower_fetch(part, 2, fetched, 1, moved) == ErrorCode.NONE
        assert not waiter.done() and [p for p, _ in moved] == [part]     # carried out once per fetch
        rm.apply_round(moved)
        assert waiter.done() and waiter.result() == ErrorCode.NONE and part.high_watermark == 3
        await asyncio.wait_for(parked_fetch, 1)          # the moved high watermark woke it
        await rm.stop()

    asyncio.run(scenario())
    assert listener.heard == [("leader", 1)]
    rm.logs.close()


def test_losing_leadership_fails_what_waits_and_follows_the_new_leader(tmp_path):
    rm, listener = _manager(tmp_path)

    async def scenario():
        part = _host(rm, leader=1, epoch=1)
        _, waiter = rm.append_records(part, batch(3), AppendOrigin.CLIENT, -1, 30_000)
        assert part.leads(1)
        _host(rm, leader=2, epoch=2)
        assert waiter.result() == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert not part.leads(1) and part.moved_away and rm.fetchers.following[(TOPIC_ID, 0)] == (2, 2)
        await rm.stop()

    asyncio.run(scenario())
    assert listener.heard == [("leader", 1), ("follower", 2)]
    rm.logs.close()


def test_a_failed_log_dirs_partitions_stay_unhosted(tmp_path):
    rm, listener = _manager(tmp_path)
    part = _host(rm, leader=2, epoch=1)
    part.log.close()                                            # offline, as after its dir failed
    rm.mark_offline()
    assert rm.get(*KEY) is None and rm.log_dirs.is_offline(KEY)
    assert _host(rm, leader=2, epoch=2) is None                 # a later image does not host it again
    assert listener.heard == [("follower", 1), ("stopped", False)]
    rm.logs.close()


def test_a_new_partition_with_every_log_dir_offline_is_not_hosted(tmp_path, caplog):
    # found by the nemesis soak (bench/soak.py --short --seed 7): a broker whose only log dir filled up
    # applied images until it stopped, and each new partition assigned to it logged a traceback
    rm, _ = _manager(tmp_path)
    rm.logs._take_offline(tmp_path)
    assert _host(rm, leader=1, epoch=0) is None
    assert "t-0: not hosted here: no online log directory" in caplog.text and "Traceback" not in caplog.text
    rm.logs.close()
