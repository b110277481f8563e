"""The broker's side of its lifecycle with the active controller, sans-IO.

``BrokerLifecycleManager`` decides which BrokerRegistration (62) or
BrokerHeartbeat (63) request to send and when; a shell sends it to the active
controller and feeds back the response (``handle_response``) or the failure
(``handle_failure``: no controller, timeout, NOT_CONTROLLER).  Only one request
is in flight at a time.  Time comes in as ``now_ms``.

States and every legal transition::

    STARTING                     not registered yet (or registration lost)
      -> RECOVERY                the controller accepted the registration (broker epoch known)
      -> SHUTTING_DOWN           begin_controlled_shutdown() before registering: nothing to hand over
    RECOVERY                     registered, fenced, catching up with the metadata log
      -> RUNNING                 a heartbeat answered IsFenced = false
      -> STARTING                the controller forgot us (STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED)
      -> PENDING_CONTROLLED_SHUTDOWN  begin_controlled_shutdown()
    RUNNING                      unfenced: may lead and follow partitions
      -> RECOVERY                a heartbeat answered IsFenced = true (our session had expired)
      -> STARTING                the controller forgot us
      -> PENDING_CONTROLLED_SHUTDOWN  begin_controlled_shutdown()
    PENDING_CONTROLLED_SHUTDOWN  heartbeating WantShutDown until leadership has moved away
      -> SHUTTING_DOWN           a heartbeat answered ShouldShutDown, or the controller forgot us,
                                 or shutdown_now()
    SHUTTING_DOWN                final: no more requests

Heartbeats go every ``broker.heartbeat.interval.ms`` (2000) when RUNNING, and
every ``FAST_HEARTBEAT_MS`` while fenced or shutting down, so that unfencing
and the shutdown go-ahead arrive quickly (Kafka's broker does the same).
Failures back off exponentially from ``retry.backoff.ms`` (100) up to
``retry.backoff.max.ms`` (1000); a response resets the backoff.

Log directory failure (KIP-858, Kafka's BrokerLifecycleManager): the broker
registers the ids of its online log dirs (``LogDirs``, from each dir's
meta.properties ``directory.id``); ``propagate_directory_failure`` adds a failed
dir to ``OfflineLogDirs``, which every later heartbeat carries, and asks for a
heartbeat at once.  A dir counts as reported once a heartbeat that carried it
was answered without error.  ``shutdown_reason`` says when the broker must stop:
a failed dir not reported within ``log.dir.failure.timeout.ms`` (30000), or
every registered log dir failed and reported (the controller has fenced the
broker and moved its leaderships; nothing is left to serve).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from tierlog.config import int_setting
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

__all__ = [
    "FAST_HEARTBEAT_MS",
    "BrokerLifecycleManager",
    "BrokerState",
    "Endpoint",
    "LifecycleRequest",
]

FAST_HEARTBEAT_MS = 10
_REREGISTER = (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED)


class BrokerState(Enum):
    # Kafka's BrokerState values, so they can be reported as Kafka does.
    STARTING = 1
    RECOVERY = 2
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7


_LEGAL = {
    BrokerState.STARTING: {BrokerState.RECOVERY, BrokerState.SHUTTING_DOWN},
    BrokerState.RECOVERY: {BrokerState.RUNNING, BrokerState.STARTING, BrokerState.PENDING_CONTROLLED_SHUTDOWN,
                           BrokerState.SHUTTING_DOWN},
    BrokerState.RUNNING: {BrokerState.RECOVERY, BrokerState.STARTING, BrokerState.PENDING_CONTROLLED_SHUTDOWN,
                          BrokerState.SHUTTING_DOWN},
    BrokerState.PENDING_CONTROLLED_SHUTDOWN: {BrokerState.SHUTTING_DOWN},
    BrokerState.SHUTTING_DOWN: set(),
}


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str                   # listener name, e.g. PLAINTEXT
    host: str
    port: int
    security_protocol: int = 0  # 0 PLAINTEXT


class LifecycleRequest(NamedTuple):
    api_key: int                # ApiKey.BROKER_REGISTRATION or ApiKey.BROKER_HEARTBEAT
    version: int                # the highest version this manager fills in
    request: dict


class BrokerLifecycleManager:
    REGISTRATION_VERSION = 3    # PreviousBrokerEpoch
    HEARTBEAT_VERSION = 1

    def __init__(self, node_id: int, incarnation_id: bytes, endpoints: list[Endpoint], rack: str | None,
                 config: Mapping[str, object], *, cluster_id: str, previous_broker_epoch: int = -1,
                 features: list[dict] | None = None, log_dirs: Sequence[bytes] = ()):
        assert len(incarnation_id) == 16
        self.node_id = node_id
        self.incarnation_id = incarnation_id
        self.endpoints = list(endpoints)
        self.rack = rack
        self.cluster_id = cluster_id
        self.heartbeat_interval_ms = int_setting(config, "broker.heartbeat.interval.ms", 2000)
        self.backoff_ms = int_setting(config, "retry.backoff.ms", 100)
        self.backoff_max_ms = int_setting(config, "retry.backoff.max.ms", 1000)
        self.previous_broker_epoch = previous_broker_epoch
        self.features = list(features or [])
        self.log_dirs = list(log_dirs)          # ids of the log dirs online at registration
        self.log_dir_failure_timeout_ms = int_setting(config, "log.dir.failure.timeout.ms", 30000)
        self._offline_dirs: dict[bytes, int] = {}   # failed dir id -> report deadline (-1: reported)
        self._sent_offline: tuple[bytes, ...] = ()  # OfflineLogDirs of the heartbeat in flight
        self.state = BrokerState.STARTING
        self.broker_epoch = -1
        self.is_caught_up = False
        self.is_fenced = True
        self.last_error: int = ErrorCode.NONE
        self._in_flight: int | None = None      # api key of the request awaiting an answer
        self._next_send_ms = 0
        self._failures = 0

    # -- what to send --------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When ``next_request`` may next return a request (None: waiting or done)."""
        if self._in_flight is not None or self.state is BrokerState.SHUTTING_DOWN:
            return None
        return self._next_send_ms

    def next_request(self, now_ms: int, current_metadata_offset: int) -> LifecycleRequest | None:
        if self._in_flight is not None or self.state is BrokerState.SHUTTING_DOWN or now_ms < self._next_send_ms:
            return None
        if self.state is BrokerState.STARTING:
            self._in_flight = ApiKey.BROKER_REGISTRATION
            return LifecycleRequest(ApiKey.BROKER_REGISTRATION, self.REGISTRATION_VERSION, self._registration())
        self._in_flight = ApiKey.BROKER_HEARTBEAT
        self._sent_offline = tuple(self._offline_dirs)
        return LifecycleRequest(ApiKey.BROKER_HEARTBEAT, self.HEARTBEAT_VERSION, {
            "BrokerId": self.node_id, "BrokerEpoch": self.broker_epoch,
            "CurrentMetadataOffset": current_metadata_offset,
            "WantFence": False,
            "WantShutDown": self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN,
            "OfflineLogDirs": list(self._sent_offline),
        })

    def _registration(self) -> dict:
        return {
            "BrokerId": self.node_id, "ClusterId": self.cluster_id, "IncarnationId": self.incarnation_id,
            "Listeners": [{"Name": e.name, "Host": e.host, "Port": e.port, "SecurityProtocol": e.security_protocol}
                          for e in self.endpoints],
            "Features": self.features, "Rack": self.rack, "IsMigratingZkBroker": False,
            "LogDirs": [d for d in self.log_dirs if d not in self._offline_dirs],
            "PreviousBrokerEpoch": self.previous_broker_epoch,
        }

    # -- what came back ------------------------------------------------------

    def handle_response(self, response: dict, now_ms: int) -> None:
        api_key, self._in_flight = self._in_flight, None
        assert api_key is not None, "a response with no request in flight"
        error = response.get("ErrorCode", ErrorCode.NONE)
        self.last_error = error
        if error == ErrorCode.NOT_CONTROLLER:
            self.handle_failure(now_ms, _already_cleared=True)
            return
        if api_key == ApiKey.BROKER_REGISTRATION:
            self._on_registration(response, error, now_ms)
        else:
            self._on_heartbeat(response, error, now_ms)

    def handle_failure(self, now_ms: int, _already_cleared: bool = False) -> None:
        """The request got no answer (no controller, timeout, NOT_CONTROLLER): retry after a backoff."""
        assert _already_cleared or self._in_flight is not None, "a failure with no request in flight"
        self._in_flight = None
        self._retry_later(now_ms)

    def _retry_later(self, now_ms: int) -> None:
        delay = min(self.backoff_max_ms, self.backoff_ms * (2 ** min(self._failures, 30)))
        self._failures += 1
        self._next_send_ms = now_ms + delay

    def _on_registration(self, response: dict, error: int, now_ms: int) -> None:
        if self.state is not BrokerState.STARTING:
            return                                      # shut down meanwhile
        if error:
            self._retry_later(now_ms)                   # DUPLICATE_BROKER_REGISTRATION: old session still alive
            return
        self._failures = 0
        self.broker_epoch = response["BrokerEpoch"]
        self.previous_broker_epoch = self.broker_epoch
        self.is_fenced, self.is_caught_up = True, False
        self._transition(BrokerState.RECOVERY)
        self._next_send_ms = now_ms                     # first heartbeat at once

    def _on_heartbeat(self, response: dict, error: int, now_ms: int) -> None:
        if error in _REREGISTER:
            self.broker_epoch = -1
            self.is_fenced, self.is_caught_up = True, False
            if self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
                self._transition(BrokerState.SHUTTING_DOWN)     # fenced and forgotten: nothing leads here
            elif self.state is not BrokerState.SHUTTING_DOWN:
                self._transition(BrokerState.STARTING)
                self._next_send_ms = now_ms
            return
        if error:
            self._retry_later(now_ms)
            return
        self._failures = 0
        for d in self._sent_offline:
            self._offline_dirs[d] = -1                  # the controller knows
        self.is_caught_up = bool(response.get("IsCaughtUp", False))
        self.is_fenced = bool(response.get("IsFenced", True))
        if self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if response.get("ShouldShutDown", False):
                self._transition(BrokerState.SHUTTING_DOWN)
                return
        elif self.state is BrokerState.RECOVERY and not self.is_fenced:
            self._transition(BrokerState.RUNNING)
        elif self.state is BrokerState.RUNNING and self.is_fenced:
            self._transition(BrokerState.RECOVERY)
        fast = self.state is not BrokerState.RUNNING
        self._next_send_ms = now_ms + (FAST_HEARTBEAT_MS if fast else self.heartbeat_interval_ms)

    # -- log directory failure -----------------------------------------------

    def propagate_directory_failure(self, dir_id: bytes, now_ms: int) -> None:
        """Report ``dir_id`` offline in every heartbeat from now on, the next one at once."""
        if dir_id in self._offline_dirs:
            return
        self._offline_dirs[dir_id] = now_ms + self.log_dir_failure_timeout_ms
        if self._in_flight is None and self.state is not BrokerState.STARTING:
            self._next_send_ms = min(self._next_send_ms, now_ms)

    @property
    def offline_dirs(self) -> list[bytes]:
        return list(self._offline_dirs)

    def shutdown_reason(self, now_ms: int) -> str | None:
        """Why this broker must stop now because of failed log dirs (None: it need not)."""
        late = [d for d, deadline in self._offline_dirs.items() if 0 <= deadline <= now_ms]
        if late:
            return (f"{len(late)} failed log dir(s) not reported to the controller within "
                    f"log.dir.failure.timeout.ms ({self.log_dir_failure_timeout_ms} ms)")
        if self.log_dirs and all(self._offline_dirs.get(d) == -1 for d in self.log_dirs):
            return "every log dir failed"
        return None

    # -- commands ------------------------------------------------------------

    def begin_controlled_shutdown(self) -> None:
        """Ask the controller to move leadership away, then shut down once it says so."""
        if self.state is BrokerState.STARTING:
            self._transition(BrokerState.SHUTTING_DOWN)
        elif self.state in (BrokerState.RECOVERY, BrokerState.RUNNING):
            self._transition(BrokerState.PENDING_CONTROLLED_SHUTDOWN)
            self._next_send_ms = 0 if self._failures == 0 else self._next_send_ms

    def shutdown_now(self) -> None:
        """Give up waiting (the shutdown timeout ran out, or an unclean stop)."""
        if self.state is not BrokerState.SHUTTING_DOWN:
            self._transition(BrokerState.SHUTTING_DOWN)

    def _transition(self, new: BrokerState) -> None:
        assert new in _LEGAL[self.state], f"illegal lifecycle transition {self.state.name} -> {new.name}"
        self.state = new
