"""Deterministic simulation of ONE tiered partition: 3 replicas, a leader that uploads and expires,
a faulty object store and a lossy metadata topic, driving tierlog's real sans-IO tiering rules.

Real cores under test: ``tiered.copy_rules`` (copy_candidates, find_highest_remote_offset),
``expiration_rules.plan_remote_expiration``, ``local_retention_rules.local_segments_to_delete``,
``read_rules.fetch_source``, ``metadata_cache.RemoteLogMetadataCache`` (with its state machine)
and ``upload_epochs``. The shell around them is a model of ``broker/remote``'s copy and
expiration passes (the same steps, in the same order).

Model:

- Log: every record is acknowledged once appended (the replication of the data itself is the
  replication simulator's subject); each replica rolls its segments at its own random sizes,
  so a new leader's segments start at other offsets than the old leader's uploads. Each
  replica has its own high watermark, which lags: a follower learns the leader's late, and a
  new leader keeps the one it had as a follower until its followers catch up.
- Metadata topic: an ordered list of records; every broker's cache applies them with its own
  lag (a new leader catches up first, as it waits for readiness). A publish may fail before
  the record is appended (then the caller sees the error, as with acks=all), or after it was
  appended (the read-back timed out: the caller sees an error, its cache does not have it yet).
- Object store: an upload may fail, or be torn (objects written, no manifest, the uploader
  gone); a delete may fail. A segment counts in remote storage once its manifest is there.
- Events: produce, roll, copy pass, expiration pass, local retention on any replica, leader
  change (to any replica; the old leader may leave an upload running on its worker thread,
  which lands later and may still publish its COPY_SEGMENT_FINISHED), and at the end topic
  deletion (which waits for uploads still running, as ``RemoteLogManager`` does).

Invariants after every event: every acknowledged record in [log start, end) is readable from
the leader's local log or from a FINISHED remote segment whose manifest is in the store; no
replica holds a local log start above what remote storage covers; finished remote segments
never overlap right after an expiration pass that ran with caught-up metadata and no fault;
after topic deletion, the store ends up empty.
"""
from __future__ import annotations

import itertools
import random
import uuid

from tierlog.tiered.copy_rules import (
    LocalSegment,
    copy_candidates,
    find_highest_remote_offset,
    upload_resume_offset,
)
from tierlog.tiered.expiration_rules import (
    PartitionLog,
    RetentionLimits,
    plan_remote_expiration,
)
from tierlog.tiered.lineage import highest_offset_in_lineage
from tierlog.tiered.local_retention_rules import (
    LocalRetention,
    local_segments_to_delete,
)
from tierlog.tiered.metadata_cache import RemoteLogMetadataCache
from tierlog.tiered.read_rules import FetchSource, TieredLogState, fetch_source
from tierlog.tiered.segment_metadata import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from tierlog.tiered.upload_epochs import segment_leader_epochs

S = RemoteLogSegmentState
TIP = TopicIdPartition(bytes(16), "t", 0)
RECORD_BYTES = 100


class PublishFailed(Exception):
    pass


class Replica:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.bases = [0]                  # segment base offsets; the last is the active segment
        self.next_roll = self._roll_size()
        self.cache = RemoteLogMetadataCache(TIP)
        self.applied = 0                  # metadata records applied
        self.highest_remote = -1
        self.hw = 0                       # this replica's high watermark

    def _roll_size(self) -> int:
        return self.rng.randint(5, 25)

    def local_start(self) -> int:
        return self.bases[0]

    def segments(self, end: int) -> list[LocalSegment]:
        out = []
        for i, base in enumerate(self.bases):
            nxt = self.bases[i + 1] if i + 1 < len(self.bases) else end
            out.append(LocalSegment(base, nxt, (nxt - base) * RECORD_BYTES, base, active=i == len(self.bases) - 1))
        return out

    def appended(self, end: int) -> None:
        if end - self.bases[-1] >= self.next_roll:
            self.bases.append(end)
            self.next_roll = self._roll_size()


class TieredSim:
    def __init__(self, seed: int, steps: int = 400):
        self.rng = random.Random(seed)
        self.steps = steps
        self.replicas = [Replica(random.Random(seed * 7 + i)) for i in range(3)]
        self.leader = 0
        self.epochs = [(0, 0)]            # (epoch, start offset)
        self.end = 0
        self.log_start = 0
        self.metadata: list = []          # the metadata topic partition
        self.truth = RemoteLogMetadataCache(TIP)     # every record applied: what a caught-up reader sees
        self.store: dict[bytes, tuple[int, int, bool]] = {}    # segment uuid -> (start, end, manifest written)
        self.in_flight: list[tuple[int, RemoteLogSegmentMetadata, bool]] = []   # (old leader, upload, FINISHED?)
        self.clean_expiration = False
        self.stats = {"appended": 0, "uploads": 0, "failed_uploads": 0, "torn_uploads": 0, "lost_publishes": 0,
                      "written_failed_publishes": 0, "late_uploads": 0, "lagging_hw_leaders": 0,
                      "local_deletes": 0, "remote_deletes": 0, "leader_changes": 0, "failed_deletes": 0}

    # --- the metadata topic ------------------------------------------------------------------------
    def publish(self, record, by: int | None = None) -> None:
        roll = self.rng.random()
        if roll < 0.04:
            self.stats["lost_publishes"] += 1
            raise PublishFailed()
        self.metadata.append(record)
        self.truth.apply(record)
        if roll < 0.07:                                  # written, but not read back in time: an error
            self.stats["written_failed_publishes"] += 1
            raise PublishFailed()
        self.catch_up(self.replicas[self.leader if by is None else by])     # returns once read back

    def catch_up(self, replica: Replica, upto: int | None = None) -> None:
        stop = len(self.metadata) if upto is None else min(upto, len(self.metadata))
        for record in self.metadata[replica.applied:stop]:
            replica.cache.apply(record)
        replica.applied = max(replica.applied, stop)

    # --- the leader's passes (broker/remote/copy_task.py, expiration_task.py) ------------------------
    def _candidates(self, index: int) -> list[LocalSegment]:
        replica = self.replicas[index]
        replica.highest_remote = upload_resume_offset(replica.highest_remote, replica.cache.finished_segments(),
                                                      self.epochs, self.end)
        return copy_candidates(replica.segments(self.end), highest_remote_offset=replica.highest_remote,
                               log_start_offset=self.log_start, last_stable_offset=replica.hw)

    def _started(self, index: int, seg: LocalSegment) -> RemoteLogSegmentMetadata:
        """COPY_SEGMENT_STARTED for ``seg`` by replica ``index`` (raises PublishFailed)."""
        start = max(seg.base_offset, self.replicas[index].highest_remote + 1, self.log_start)
        epochs = segment_leader_epochs(self.epochs, start, seg.next_offset)
        meta = RemoteLogSegmentMetadata(RemoteLogSegmentId(TIP, uuid.UUID(int=self.rng.getrandbits(128)).bytes),
                                        start, seg.next_offset - 1, 0, index, 0, epochs, seg.size)
        self.publish(meta, by=index)
        return meta

    def copy_pass(self) -> None:
        leader = self.replicas[self.leader]
        for seg in self._candidates(self.leader):
            try:
                meta = self._started(self.leader, seg)
            except PublishFailed:
                return
            roll = self.rng.random()
            if roll < 0.08:                                  # torn: objects but no manifest, uploader gone
                self.store[meta.segment_id.id] = (meta.start_offset, meta.end_offset, False)
                self.stats["torn_uploads"] += 1
                return
            if roll < 0.16:                                  # failed: the store cleaned up, STARTED abandoned
                self.stats["failed_uploads"] += 1
                self._update_quietly(meta, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED)
                return
            self.store[meta.segment_id.id] = (meta.start_offset, meta.end_offset, True)
            try:
                self.publish(RemoteLogSegmentMetadataUpdate(meta.segment_id, 0, S.COPY_SEGMENT_FINISHED, self.leader))
            except PublishFailed:
                return                                       # uploaded but not FINISHED: uploaded again later
            leader.highest_remote = max(leader.highest_remote, meta.end_offset)
            self.stats["uploads"] += 1

    def _update_quietly(self, meta, *states) -> None:
        for state in states:
            try:
                self.publish(RemoteLogSegmentMetadataUpdate(meta.segment_id, 0, state, self.leader))
            except PublishFailed:
                return

    def land_in_flight(self) -> None:
        """An old leader's worker thread ends its upload; its cancelled task may still write FINISHED."""
        for old, meta, finish in self.in_flight:
            self.store[meta.segment_id.id] = (meta.start_offset, meta.end_offset, True)
            self.stats["late_uploads"] += 1
            if finish:
                try:
                    self.publish(RemoteLogSegmentMetadataUpdate(meta.segment_id, 0, S.COPY_SEGMENT_FINISHED, old),
                                 by=old)
                except PublishFailed:
                    pass
        self.in_flight.clear()

    def expiration_pass(self, retention_bytes: int) -> None:
        self.clean_expiration = False
        leader = self.replicas[self.leader]
        cache = leader.cache
        caught_up = leader.applied == len(self.metadata)
        local_only = sum(s.size for s in leader.segments(self.end)[:-1] if s.base_offset > leader.highest_remote)
        plan = plan_remote_expiration(cache.segments(), RetentionLimits(-1, retention_bytes), now_ms=0,
                                      log=PartitionLog(self.log_start, leader.hw, self.end, tuple(self.epochs)),
                                      only_local_bytes=local_only)
        if plan.new_log_start_offset is not None:
            self.log_start = max(self.log_start, min(plan.new_log_start_offset, leader.hw))
        abandoned = [m for m in cache.segments() if m.state == S.COPY_SEGMENT_STARTED
                     and m.end_offset <= leader.highest_remote]
        for meta in dict.fromkeys([*plan.to_delete, *abandoned]):
            try:
                self.publish(RemoteLogSegmentMetadataUpdate(meta.segment_id, 0, S.DELETE_SEGMENT_STARTED, self.leader))
            except PublishFailed:
                return
            if self.rng.random() < 0.05:
                self.stats["failed_deletes"] += 1
                return                                       # DELETE_STARTED stays; deleted again next pass
            self.store.pop(meta.segment_id.id, None)
            self.stats["remote_deletes"] += 1
            self._update_quietly(meta, S.DELETE_SEGMENT_FINISHED)
        self.clean_expiration = caught_up and leader.applied == len(self.metadata) and not self.in_flight

    # --- local retention on a replica (storage.retention with local.retention.bytes) -----------------
    def local_retention(self, index: int) -> None:
        replica = self.replicas[index]
        if index != self.leader:
            highest = highest_offset_in_lineage(replica.cache.finished_segments(), self.epochs, self.end)
            replica.highest_remote = max(replica.highest_remote, highest)
        count = local_segments_to_delete(replica.segments(self.end), LocalRetention(-1, -1, -1, 3000),
                                         now_ms=0, high_watermark=replica.hw,
                                         highest_remote_offset=replica.highest_remote, log_start_offset=self.log_start)
        if count:
            del replica.bases[:count]
            self.stats["local_deletes"] += count

    # --- leadership --------------------------------------------------------------------------------
    def change_leader(self) -> None:
        old = self.leader
        if self.rng.random() < 0.5:
            self._leave_upload_running(old)
        self.leader = self.rng.choice([i for i in range(3) if i != self.leader])
        new = self.replicas[self.leader]
        if new.hw < self.replicas[old].hw:
            self.stats["lagging_hw_leaders"] += 1
        self.catch_up(new)                                   # a new leader waits until its metadata is ready
        epoch = self.epochs[-1][0] + 1
        if self.epochs[-1][1] == self.end:
            self.epochs.pop()                                # an epoch with no records is replaced, as in Kafka
        self.epochs.append((epoch, self.end))
        found = find_highest_remote_offset(self.epochs, self.end, new.cache.highest_offset_for_epoch).offset
        new.highest_remote = min(found, highest_offset_in_lineage(new.cache.finished_segments(), self.epochs,
                                                                  self.end))
        self.stats["leader_changes"] += 1

    def _leave_upload_running(self, old: int) -> None:
        """The old leader's copy task is cancelled mid-upload: the worker thread goes on."""
        candidates = self._candidates(old)
        if self.in_flight or not candidates:
            return
        try:
            meta = self._started(old, candidates[0])
        except PublishFailed:
            return
        self.in_flight.append((old, meta, self.rng.random() < 0.6))

    # --- the run -----------------------------------------------------------------------------------
    def run(self) -> None:
        for _ in range(self.steps):
            self.step()
            self.check()
        self.delete_topic()

    def step(self) -> None:
        r = self.rng.random()
        leader = self.replicas[self.leader]
        if r < 0.45:
            n = self.rng.randint(1, 6)
            self.end += n
            self.stats["appended"] += n
            for replica in self.replicas:
                replica.appended(self.end)
            if self.rng.random() < 0.6:
                leader.hw = self.end                         # the followers fetched it
        elif r < 0.48:
            leader.hw = self.end
        elif r < 0.51:
            self.land_in_flight()
        elif r < 0.65:
            self.copy_pass()
        elif r < 0.75:
            self.expiration_pass(retention_bytes=self.rng.choice([-1, 0, 3000, 20000, 50000]))
        elif r < 0.93:
            self.local_retention(self.rng.randrange(3))
        elif r < 0.97:
            self.change_leader()
        for replica in self.replicas:                        # followers' metadata lags behind
            self.catch_up(replica, replica.applied + self.rng.randint(0, 2))
            if self.rng.random() < 0.3:                      # a follower learns the leader's high watermark
                replica.hw = max(replica.hw, self.replicas[self.leader].hw)

    def check(self) -> None:
        finished = self._finished_in_store()
        leader = self.replicas[self.leader]
        state = TieredLogState(True, self.log_start, leader.local_start(), self.end, leader.highest_remote,
                               tuple(self.epochs))
        covered_to = self.log_start                          # every offset below it is readable
        for s, e in sorted(finished):
            if s <= covered_to:
                covered_to = max(covered_to, e + 1)
        for offset in (self.log_start, leader.local_start() - 1, covered_to):
            if self.log_start <= offset < self.end:
                source = fetch_source(state, offset, from_follower=False)
                assert source in (FetchSource.LOCAL, FetchSource.REMOTE), (offset, source)
        assert covered_to >= min(leader.local_start(), self.end), \
            f"acked offsets [{covered_to}, {leader.local_start()}) are nowhere: {sorted(finished)}"
        for i, replica in enumerate(self.replicas):
            covered = max((e for s, e in finished), default=-1) + 1
            assert replica.local_start() <= max(covered, self.log_start), \
                f"replica {i} deleted local data up to {replica.local_start()} that remote storage lacks ({covered})"
        if self.clean_expiration:
            self.clean_expiration = False
            spans = sorted(finished)
            for (_s1, e1), (s2, _e2) in itertools.pairwise(spans):
                assert s2 > e1, f"overlapping remote segments {spans}"

    def _finished_in_store(self) -> list[tuple[int, int]]:
        """FINISHED in the (caught-up) metadata, with the objects and manifest in the store."""
        out = []
        for m in self.truth.finished_segments():
            assert self.store.get(m.segment_id.id, (0, 0, False))[2], f"finished segment {m} missing from store"
            out.append((m.start_offset, m.end_offset))
        return out

    def delete_topic(self) -> None:
        """Topic deletion waits for uploads still running, then lists the partition's prefix and
        deletes everything, retried until done."""
        self.land_in_flight()
        for _attempt in range(20):
            for sid in list(self.store):
                if self.rng.random() >= 0.2:
                    del self.store[sid]
            if not self.store:
                return
        assert not self.store, f"remote data of the deleted topic left: {len(self.store)} segments"
