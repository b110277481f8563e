"""Broker registration, heartbeats, fencing and controlled shutdown (keys 62, 63, 64).

Kafka's ClusterControlManager and BrokerHeartbeatManager behaviours, our code:

* BrokerRegistration: a broker's epoch is the offset its RegisterBrokerRecord
  will have in the metadata log.  A registration with another incarnation id
  while the old one is unfenced with a live session answers
  DUPLICATE_BROKER_REGISTRATION (a fenced broker has no live session, so a
  broker restarted after a clean shutdown registers at once); otherwise, and for
  the same incarnation again (a retry), it registers anew with a new epoch.
  New registrations are fenced.
* BrokerHeartbeat: unknown broker -> BROKER_ID_NOT_REGISTERED, other epoch ->
  STALE_BROKER_EPOCH.  Each broker is in one of FENCED, UNFENCED,
  CONTROLLED_SHUTDOWN, SHUTDOWN_NOW (the next state is chosen from the request):

  - FENCED -> SHUTDOWN_NOW on WantShutDown; -> UNFENCED once the reported
    CurrentMetadataOffset reaches the broker's registration offset (its epoch)
    and it does not WantFence (UnfenceBrokerRecord).
  - UNFENCED -> FENCED on WantFence (FenceBrokerRecord); -> CONTROLLED_SHUTDOWN
    on WantShutDown (BrokerRegistrationChangeRecord in_controlled_shutdown=1).
  - CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW (FenceBrokerRecord) once the broker
    leads no partition and every active broker has reported a metadata offset at
    or past the controlled-shutdown record, so they all know the new leaders.

  Moving leaders away from a fenced or shutting-down broker is *derived* by
  the metadata image from these event records (KIP-630's small records): the
  controller writes no PartitionChangeRecord for it.
  - Log directory failure (KIP-858): OfflineLogDirs names the broker's failed
    log dirs.  Dirs it had registered online and now reports offline are
    dropped from its registration (BrokerRegistrationChangeRecord LogDirs = the
    remaining online dirs, as Kafka's handleDirectoriesOffline); once none of
    its registered dirs is online the broker is fenced (FenceBrokerRecord, from
    any state; SHUTDOWN_NOW if it also wants to shut down) and never unfenced
    while it reports them.  Fencing moves its leaderships to in-sync replicas
    and takes it out of every ISR (derived, below).  A partial failure moves
    only the replicas assigned to the failed dirs (``offline_changes``: the
    PartitionChangeRecords of ``directory_control``, written before the
    registration change), as Kafka's handleDirectoriesOffline; the broker keeps
    leading the partitions of its healthy dirs.

* A session expires ``broker.session.timeout.ms`` after the last heartbeat;
  ``tick`` fences every active broker whose session expired.
* Every fence and unfence is logged, one line with the reason.
* UnregisterBroker: UnregisterBrokerRecord, or BROKER_ID_NOT_REGISTERED.

Methods take the current (pending) image and ``next_offset``, the offset the
first record returned will get; they return ``(records, response)``.
"""
from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from tierlog.metadata.cluster_records import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    MetadataRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from tierlog.metadata.image import BrokerInfo, MetadataImage
from tierlog.protocol.errors import ErrorCode

from .heartbeats import HeartbeatTracker

if TYPE_CHECKING:
    from tierlog.protocol.typed.broker_heartbeat import (
        BrokerHeartbeatRequest,
        BrokerHeartbeatResponse,
    )
    from tierlog.protocol.typed.broker_registration import (
        BrokerRegistrationRequest,
        BrokerRegistrationResponse,
    )
    from tierlog.protocol.typed.unregister_broker import (
        UnregisterBrokerRequest,
        UnregisterBrokerResponse,
    )

__all__ = ["CONTROLLED_SHUTDOWN", "FENCED", "SHUTDOWN_NOW", "UNFENCED", "ClusterControlManager"]

FENCED, UNFENCED, CONTROLLED_SHUTDOWN, SHUTDOWN_NOW = "FENCED", "UNFENCED", "CONTROLLED_SHUTDOWN", "SHUTDOWN_NOW"
_log = logging.getLogger(__name__)

#: (broker id, its dirs newly offline) -> the PartitionChangeRecords taking its replicas there offline
OfflineChanges = Callable[[int, list[bytes]], Sequence[MetadataRecord]]


class ClusterControlManager:
    def __init__(self, cluster_id: str | None, session_timeout_ms: int):
        self.cluster_id = cluster_id
        self.sessions = HeartbeatTracker(session_timeout_ms)
        self._shutdown_offsets: dict[int, int] = {}   # broker -> offset of its controlled-shutdown record

    # -- leadership of the controller ---------------------------------------

    def deactivate(self) -> None:
        """Sessions are the active controller's memory only; a new term starts them afresh."""
        self.sessions.clear()
        self._shutdown_offsets.clear()

    def start_missing_sessions(self, image: MetadataImage, now_ms: int) -> None:
        """Every registered broker without a session gets one starting now (after activation)."""
        for b in image.brokers:
            if not self.sessions.has_session(b):
                self.sessions.touch(b, now_ms)

    # -- BrokerRegistration (62) --------------------------------------------

    def register(self, request: BrokerRegistrationRequest, image: MetadataImage, now_ms: int,
                 next_offset: int) -> tuple[Sequence[MetadataRecord], BrokerRegistrationResponse]:
        broker_id = request["BrokerId"]
        error = self._registration_error(request, image, now_ms)
        if error is not None:
            return [], {"ThrottleTimeMs": 0, "ErrorCode": error, "BrokerEpoch": -1}
        record = RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=request["IncarnationId"], broker_epoch=next_offset,
            endpoints=tuple(BrokerEndpoint(e["Name"], e["Host"], e["Port"], e["SecurityProtocol"])
                            for e in request["Listeners"]),
            features=tuple(BrokerFeature(f["Name"], f["MinSupportedVersion"], f["MaxSupportedVersion"])
                           for f in request.get("Features", [])),
            rack=request.get("Rack"), fenced=True, in_controlled_shutdown=False,
            log_dirs=tuple(request.get("LogDirs", [])))
        self.sessions.reset(broker_id, now_ms)
        self._shutdown_offsets.pop(broker_id, None)
        return [record], {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "BrokerEpoch": next_offset}

    def _registration_error(self, request: BrokerRegistrationRequest, image: MetadataImage, now_ms: int) -> int | None:
        if self.cluster_id is not None and request["ClusterId"] != self.cluster_id:
            return ErrorCode.INCONSISTENT_CLUSTER_ID
        if request["BrokerId"] < 0 or not request["Listeners"]:
            return ErrorCode.INVALID_REGISTRATION
        existing = image.brokers.get(request["BrokerId"])
        if (existing is not None and existing.incarnation_id != request["IncarnationId"]
                and not existing.fenced and self.sessions.is_alive(request["BrokerId"], now_ms)):
            return ErrorCode.DUPLICATE_BROKER_REGISTRATION
        return None

    # -- BrokerHeartbeat (63) -----------------------------------------------

    def heartbeat(self, request: BrokerHeartbeatRequest, image: MetadataImage, now_ms: int, next_offset: int,
                  leads_partitions: Callable[[int], bool],
                  offline_changes: OfflineChanges = lambda _b, _dirs: [],
                  ) -> tuple[Sequence[MetadataRecord], BrokerHeartbeatResponse]:
        broker_id = request["BrokerId"]
        error = check_broker_epoch(image, broker_id, request["BrokerEpoch"])
        if error:
            return [], _hb_response(error)
        reg = image.brokers[broker_id]
        offset = request["CurrentMetadataOffset"]
        self.sessions.touch(broker_id, now_ms, offset)
        caught_up = offset >= reg.epoch
        offline = _offline_registered_dirs(reg, request)
        no_online_dir = bool(reg.log_dirs) and len(offline) == len(reg.log_dirs)
        current = self._state(reg)
        nxt = self._next_state(current, request, broker_id, caught_up, image, leads_partitions, no_online_dir)
        records = self._dir_change_records(reg, offline, no_online_dir, offline_changes)
        records += self._records_for(current, nxt, reg, next_offset,
                                     _heartbeat_reason(nxt, request, offset, no_online_dir, offline))
        fenced = nxt in (FENCED, SHUTDOWN_NOW)
        return records, {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "IsCaughtUp": caught_up,
                         "IsFenced": fenced, "ShouldShutDown": nxt == SHUTDOWN_NOW}

    @staticmethod
    def _state(reg: BrokerInfo) -> str:
        if reg.fenced:
            return FENCED
        return CONTROLLED_SHUTDOWN if reg.in_controlled_shutdown else UNFENCED

    @staticmethod
    def _dir_change_records(reg: BrokerInfo, offline: list[bytes], no_online_dir: bool,
                            offline_changes: OfflineChanges) -> list[MetadataRecord]:
        """Kafka's handleDirectoriesOffline: the replicas in the failed dirs go offline, then the
        registration keeps only its online dirs."""
        if not offline or no_online_dir:
            return []       # nothing new, or the fence says it (an empty LogDirs would mean "no change")
        online = tuple(d for d in reg.log_dirs if d not in offline)
        moved = offline_changes(reg.node_id, offline)
        _log.warning("broker %d (epoch %d): log dirs %s offline, %s remain online; %d partitions with a replica "
                     "there change leader or ISR", reg.node_id, reg.epoch, _dir_names(offline), _dir_names(online),
                     len(moved))
        return [*moved, BrokerRegistrationChangeRecord(broker_id=reg.node_id, broker_epoch=reg.epoch, log_dirs=online)]

    def _next_state(self, current: str, request: BrokerHeartbeatRequest, broker_id: int, caught_up: bool, image: MetadataImage,
                    leads_partitions: Callable[[int], bool], no_online_dir: bool = False) -> str:
        want_fence, want_shutdown = request["WantFence"], request["WantShutDown"]
        if current == FENCED:
            if want_shutdown:
                return SHUTDOWN_NOW
            return UNFENCED if caught_up and not want_fence and not no_online_dir else FENCED
        if no_online_dir:
            return SHUTDOWN_NOW if want_shutdown else FENCED
        if want_fence:
            return SHUTDOWN_NOW if want_shutdown else FENCED
        if current == UNFENCED:
            return CONTROLLED_SHUTDOWN if want_shutdown else UNFENCED
        # CONTROLLED_SHUTDOWN: it stays there until its leadership has moved and everyone knows.
        if leads_partitions(broker_id):
            return CONTROLLED_SHUTDOWN
        needed = self._shutdown_offsets.get(broker_id, 0)
        return SHUTDOWN_NOW if self._lowest_active_offset(image) >= needed else CONTROLLED_SHUTDOWN

    def _lowest_active_offset(self, image: MetadataImage) -> int:
        active = [b.node_id for b in image.brokers.values() if self._state(b) == UNFENCED]
        offsets = [self.sessions.metadata_offset(b) for b in active]
        return min(offsets) if offsets else 2**63 - 1

    def _records_for(self, current: str, nxt: str, reg: BrokerInfo, next_offset: int, reason: str) -> list[MetadataRecord]:
        if nxt == current or (current == FENCED and nxt == SHUTDOWN_NOW):
            return []
        if nxt in (FENCED, SHUTDOWN_NOW):
            self._shutdown_offsets.pop(reg.node_id, None)
            _log.warning("fencing broker %d (epoch %d): %s", reg.node_id, reg.epoch, reason)
            return [FenceBrokerRecord(id=reg.node_id, epoch=reg.epoch)]
        if nxt == UNFENCED:
            _log.info("unfencing broker %d (epoch %d): %s", reg.node_id, reg.epoch, reason)
            return [UnfenceBrokerRecord(id=reg.node_id, epoch=reg.epoch)]
        assert nxt == CONTROLLED_SHUTDOWN, (current, nxt)
        self._shutdown_offsets[reg.node_id] = next_offset
        return [BrokerRegistrationChangeRecord(broker_id=reg.node_id, broker_epoch=reg.epoch,
                                               in_controlled_shutdown=1)]

    # -- UnregisterBroker (64) ----------------------------------------------

    def unregister(self, request: UnregisterBrokerRequest,
                   image: MetadataImage) -> tuple[Sequence[MetadataRecord], UnregisterBrokerResponse]:
        reg = image.brokers.get(request["BrokerId"])
        if reg is None:
            return [], {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.BROKER_ID_NOT_REGISTERED,
                        "ErrorMessage": f"Broker {request['BrokerId']} is not registered."}
        self.sessions.remove(reg.node_id)
        self._shutdown_offsets.pop(reg.node_id, None)
        return ([UnregisterBrokerRecord(broker_id=reg.node_id, broker_epoch=reg.epoch)],
                {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None})

    # -- periodic -----------------------------------------------------------

    def fence_expired(self, image: MetadataImage, now_ms: int) -> list[MetadataRecord]:
        """FenceBrokerRecords for active brokers whose session ran out."""
        live = [b.node_id for b in image.brokers.values() if not b.fenced]
        out: list[MetadataRecord] = []
        for b in self.sessions.expired(live, now_ms):
            reg = image.brokers[b]                  # expired() answers only of ``live``
            self._shutdown_offsets.pop(b, None)
            _log.warning("fencing broker %d (epoch %d): no heartbeat within broker.session.timeout.ms (%d ms)",
                         b, reg.epoch, self.sessions.session_timeout_ms)
            out.append(FenceBrokerRecord(id=b, epoch=reg.epoch))
        return out

    def next_deadline_ms(self, image: MetadataImage) -> int | None:
        live = [b.node_id for b in image.brokers.values() if not b.fenced]
        return self.sessions.next_expiry_ms(live)

def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int, *,
                       unregistered: int = ErrorCode.BROKER_ID_NOT_REGISTERED,
                       unset_skips: bool = False, fenced_is_stale: bool = False) -> int:
    """The one broker-epoch check of the controller's broker-to-controller APIs
    (Kafka's ClusterControlManager.checkBrokerEpoch): 0 if ``broker_id`` is
    registered with ``broker_epoch``, else the error code to answer.

    ``unregistered`` is the code for an unknown broker (AlterPartition answers
    STALE_BROKER_EPOCH, as Kafka); ``unset_skips`` lets an epoch of -1 pass (an
    AlterPartition older than v2 carries none); ``fenced_is_stale`` answers
    STALE_BROKER_EPOCH to a fenced broker (AllocateProducerIds).
    """
    reg = image.brokers.get(broker_id)
    if reg is None:
        return unregistered
    if unset_skips and broker_epoch == -1:
        return ErrorCode.NONE
    if reg.epoch != broker_epoch or (fenced_is_stale and reg.fenced):
        return ErrorCode.STALE_BROKER_EPOCH
    return ErrorCode.NONE


def _offline_registered_dirs(reg: BrokerInfo, request: BrokerHeartbeatRequest) -> list[bytes]:
    """The broker's registered online log dirs that its heartbeat reports offline."""
    reported = set(request.get("OfflineLogDirs") or ())
    return [d for d in reg.log_dirs if d in reported]


def _heartbeat_reason(nxt: str, request: BrokerHeartbeatRequest, offset: int, no_online_dir: bool, offline: list[bytes]) -> str:
    """Why a heartbeat moves the broker to ``nxt`` (for the one line logged per fence / unfence)."""
    if nxt == UNFENCED:
        return f"caught up with the metadata log (offset {offset})"
    if no_online_dir:
        return f"every log dir offline ({_dir_names(offline)})"
    if nxt == SHUTDOWN_NOW and not request["WantFence"]:
        return "controlled shutdown complete (it leads no partition)"
    return "it asked to be fenced (WantFence)"


def _dir_names(dirs: Iterable[bytes]) -> str:
    return ", ".join(_uuid_str(d) for d in dirs) or "none"


def _uuid_str(raw: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _hb_response(error: int) -> BrokerHeartbeatResponse:
    return {"ThrottleTimeMs": 0, "ErrorCode": error, "IsCaughtUp": False, "IsFenced": True,
            "ShouldShutDown": False}
