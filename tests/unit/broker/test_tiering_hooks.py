"""``TieringHooks``: leadership fan-out in order, a followed partition's tiering traits, and
KIP-1023's dynamic ``follower.fetch.last.tiered.offset.enable``."""
from types import SimpleNamespace

from tierlog.broker.tiering_hooks import LAST_TIERED_OFFSET_ENABLE, TieringHooks
from tierlog.metadata import MetadataImage

ME = 1


class Listener:
    def __init__(self, name, heard):
        self.name, self.heard = name, heard

    def on_leader(self, part):
        self.heard.append((self.name, "leader", part))

    def on_follower(self, part):
        self.heard.append((self.name, "follower", part))

    def on_stopped(self, part, topic_deleted):
        self.heard.append((self.name, "stopped", part, topic_deleted))


def _part(remote=True, compact=False):
    return SimpleNamespace(config=SimpleNamespace(remote_storage_enable=remote, compact_enabled=compact))


def test_the_remote_log_manager_hears_first_then_the_listeners_in_order():
    heard = []
    hooks = TieringHooks(ME, Listener("rlm", heard), False)
    hooks.add_listener(Listener("groups", heard))
    hooks.on_leader("p")
    hooks.on_stopped("p", True)
    assert heard == [("rlm", "leader", "p"), ("groups", "leader", "p"),
                     ("rlm", "stopped", "p", True), ("groups", "stopped", "p", True)]


def test_a_partition_is_tiered_only_when_the_broker_and_the_topic_tier():
    assert TieringHooks(ME, Listener("rlm", []), False).topic_tiering(_part()).tiered
    off_here = TieringHooks(ME, None, False)
    assert not off_here.topic_tiering(_part()).tiered
    assert off_here.topic_tiering(_part(remote=False, compact=True)).compacted


def test_kip1023_broker_dynamic_then_cluster_dynamic_then_static():
    hooks = TieringHooks(ME, None, True)
    image = MetadataImage.empty()
    assert hooks.last_tiered_offset_enable(image)
    cluster = SimpleNamespace(broker_configs=lambda node: {}, cluster_configs=lambda: {LAST_TIERED_OFFSET_ENABLE: "false"})
    assert not hooks.last_tiered_offset_enable(cluster)
    mine = SimpleNamespace(broker_configs=lambda node: {LAST_TIERED_OFFSET_ENABLE: "TRUE"} if node == ME else {},
                           cluster_configs=lambda: {LAST_TIERED_OFFSET_ENABLE: "false"})
    assert hooks.last_tiered_offset_enable(mine)
