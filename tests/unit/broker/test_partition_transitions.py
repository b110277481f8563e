"""``PartitionTransitions``: the image's record makes a hosted partition leader (at a new epoch:
``become_leader``, the fetcher stops, followers whose parked fetch names old partitions are
woken, the listeners hear; within its epoch: ``update_leader``) or follower (what waited fails,
parked fetches of it wake, the fetcher follows the new leader; no leader: it stops)."""
import asyncio
import random
from types import SimpleNamespace

from follow_fakes import Fetchers, Listener
from leaders import NOW

from tierlog.broker.fetch_purgatory import FetchPurgatory
from tierlog.broker.fetch_session import FetchSessionCache
from tierlog.broker.partition import AppendOrigin, Partition
from tierlog.broker.partition_transitions import ELIGIBLE_BYTES, PartitionTransitions
from tierlog.metadata.image import PartitionInfo
from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch
from tierlog.replication.leader_moves import LeaderMoves
from tierlog.storage import Log, LogConfig

TOPIC_ID = b"\x02" * 16


class Tiering(Listener):
    def topic_tiering(self, part):
        return None


def _setup(tmp_path, defaults=None):
    log = Log.open(tmp_path / "t-0", LogConfig.from_props({"min.insync.replicas": "2"}), NOW)
    part = Partition("t", 0, TOPIC_ID, log, -1, -1)
    applied = []
    purgatory = FetchPurgatory(FetchSessionCache(10, random.Random(1)))
    transitions = PartitionTransitions(1, Fetchers(), LeaderMoves(500), Tiering(), purgatory, defaults or {},
                                       30_000, lambda: 1, lambda: NOW, lambda p, upd: applied.append(upd))
    return part, transitions, purgatory, applied


def _image(leader, epoch, isr=(1, 2), configs=None):
    p = PartitionInfo(0, leader, epoch, (1, 2), isr, partition_epoch=epoch)
    image = SimpleNamespace(brokers={1: SimpleNamespace(usable=True), 2: SimpleNamespace(usable=True)},
                            topics={"t": None},
                            config=lambda name, t, default: (configs or {}).get(name, default))
    return image, p


def test_leader_then_follower(tmp_path):
    part, transitions, purgatory, applied = _setup(tmp_path)

    async def scenario():
        transitions.fetchers.following[(TOPIC_ID, 0)] = (2, 0)
        image, p = _image(leader=1, epoch=1)
        transitions.transition(image, part, p)
        assert part.leads(1) and (TOPIC_ID, 0) not in transitions.fetchers.following
        outcome = part.append_as_leader(bytearray(build_batch([Record(0, NOW, None, b"v")])), AppendOrigin.CLIENT,
                                        -1, NOW, "waiter", 30_000)
        assert outcome.parked
        image, p = _image(leader=1, epoch=1, isr=(1,))          # the same epoch: update_leader
        transitions.transition(image, part, p)
        assert part.leads(1)
        parked = asyncio.ensure_future(purgatory.wait([part.key], 30))
        await asyncio.sleep(0)
        image, p = _image(leader=2, epoch=2)
        transitions.transition(image, part, p)
        await asyncio.wait_for(parked, 1)                       # a parked fetch of it learns it moved
        assert [c.error for upd in applied for c in upd.acks] == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
        assert transitions.fetchers.following[(TOPIC_ID, 0)] == (2, 2) and part.moved_away
        image, p = _image(leader=-1, epoch=3)
        transitions.transition(image, part, p)
        assert (TOPIC_ID, 0) not in transitions.fetchers.following

    asyncio.run(scenario())
    assert transitions._tiering.heard == [("leader", 1), ("follower", 2)]
    part.log.close()


def test_eligible_bytes_from_the_image_else_the_defaults(tmp_path):
    part, transitions, _, _ = _setup(tmp_path, defaults={ELIGIBLE_BYTES: "100"})
    assert transitions.eligible_bytes(_image(1, 1)[0], part) == 100
    assert transitions.eligible_bytes(_image(1, 1, configs={ELIGIBLE_BYTES: "7"})[0], part) == 7
    assert transitions.eligible_bytes(_image(1, 1, configs={ELIGIBLE_BYTES: "x"})[0], part) == -1
    part.log.close()
