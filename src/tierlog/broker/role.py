"""The broker role's shell: registration and heartbeats with the active controller,
and the broker's view of the metadata image.

``LifecycleLoop`` drives the sans-IO ``BrokerLifecycleManager``: it sends the
request the manager wants through the controller channel (at most one in
flight), feeds back the answer or the failure, and sleeps until the manager's
next deadline.  ``wait_running`` resolves once the controller has unfenced the
broker (it registered and caught up with the metadata log).  ``shutdown``
runs Kafka's controlled shutdown: WantShutDown heartbeats until the controller
has moved leadership away and answers ShouldShutDown (bounded by a deadline).
``propagate_directory_failure`` reports a failed log dir in the next heartbeat;
when the manager says the broker must stop (``shutdown_reason``: every log dir
failed, or a failure could not be reported in time) ``on_fatal(reason)`` is
called once (the node stops).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tierlog.broker.controller_channel import ControllerChannel, ControllerUnavailable
from tierlog.broker.lifecycle import BrokerLifecycleManager, BrokerState
from tierlog.clock import wall_clock_ms
from tierlog.net.tasks import cancel_and_wait, wait_until

__all__ = ["LifecycleLoop", "MetadataView"]

log = logging.getLogger(__name__)
IDLE_WAKE_S = 0.5
CONTROLLED_SHUTDOWN_MAX_S = 10.0


class MetadataView:
    """The latest committed image this node has, with waiters for a condition on it."""

    def __init__(self, loader):
        self.loader = loader
        self._changed = asyncio.Event()
        loader.subscribe(self._on_image)

    @property
    def image(self):
        return self.loader.image

    def _on_image(self, image, delta) -> None:
        self._changed.set()

    async def wait_for(self, predicate, timeout_s: float) -> bool:
        """True once ``predicate(image)`` holds, False at the deadline."""
        return await wait_until(lambda: predicate(self.image), self._changed, timeout_s)


class LifecycleLoop:
    def __init__(self, manager: BrokerLifecycleManager, controller_channel: ControllerChannel, metadata_offset,
                 request_timeout_s: float, on_fatal: Callable[[str], None] = lambda _reason: None):
        self.manager = manager
        self.on_fatal = on_fatal
        self._fatal_reported = False
        self.controller_channel = controller_channel
        self.metadata_offset = metadata_offset      # () -> last metadata offset this broker applied
        self.request_timeout_s = request_timeout_s
        self._wake = asyncio.Event()
        self._running = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def wait_running(self) -> None:
        await self._running.wait()

    def propagate_directory_failure(self, dir_id: bytes) -> None:
        self.manager.propagate_directory_failure(dir_id, wall_clock_ms())
        self._wake.set()

    def _check_fatal(self, now: int) -> None:
        reason = self.manager.shutdown_reason(now)
        if reason is not None and not self._fatal_reported:
            self._fatal_reported = True
            self.on_fatal(reason)

    async def _run(self) -> None:
        while self.manager.state is not BrokerState.SHUTTING_DOWN:
            now = wall_clock_ms()
            self._check_fatal(now)
            req = self.manager.next_request(now, self.metadata_offset())
            if req is not None:
                await self._exchange(req)
                continue
            deadline = self.manager.next_deadline_ms()
            delay = IDLE_WAKE_S if deadline is None else max(0.0, min(IDLE_WAKE_S, (deadline - now) / 1000))
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except TimeoutError:
                pass

    async def _exchange(self, req) -> None:
        try:
            resp = await self.controller_channel.send(req.api_key, req.request, self.request_timeout_s, req.version)
        except ControllerUnavailable as e:
            log.debug("lifecycle request failed: %s", e)
            self.manager.handle_failure(wall_clock_ms())
            return
        before = self.manager.state
        self.manager.handle_response(resp, wall_clock_ms())
        after = self.manager.state
        if after is not before:
            log.info("broker state %s -> %s (broker epoch %d)", before.name, after.name, self.manager.broker_epoch)
        if after is BrokerState.RUNNING:
            self._running.set()
        else:
            self._running.clear()

    async def shutdown(self) -> None:
        """Controlled shutdown, bounded; then stop heartbeating."""
        if self._task is None:
            return
        if self.manager.state in (BrokerState.RUNNING, BrokerState.RECOVERY):
            self.manager.begin_controlled_shutdown()
            self._wake.set()
            try:
                await asyncio.wait_for(asyncio.shield(self._task), CONTROLLED_SHUTDOWN_MAX_S)
            except TimeoutError:
                log.warning("controlled shutdown did not finish within %ss", CONTROLLED_SHUTDOWN_MAX_S)
        if self.manager.state is not BrokerState.SHUTTING_DOWN:
            self.manager.shutdown_now()
        await cancel_and_wait([self._task], "lifecycle loop")
