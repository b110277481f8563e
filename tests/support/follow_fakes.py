"""Just enough of ``replication.ReplicaFetchers`` and of a leadership listener for tests of who a
broker follows and leads."""
from __future__ import annotations


class Fetchers:
    """Who this broker follows: (topic id, partition) -> (leader, epoch)."""

    def __init__(self):
        self.following = {}

    def stop_following(self, key):
        self.following.pop(key, None)

    def become_follower(self, key, leader, epoch, log, tiering):
        self.following[key] = (leader, epoch)
        return True


class Listener:
    """A leadership listener that notes what it heard."""

    def __init__(self):
        self.heard = []

    def on_leader(self, part):
        self.heard.append(("leader", part.leader_epoch))

    def on_follower(self, part):
        self.heard.append(("follower", part.leader_epoch))

    def on_stopped(self, part, topic_deleted):
        self.heard.append(("stopped", topic_deleted))
