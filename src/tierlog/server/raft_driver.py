"""The asyncio shell of one Raft replica (tierlog.raft.RaftNode is sans-IO).

It calls ``tick`` at the node's deadline, sends the node's requests to peers
(one task per request, the answer or failure fed back), answers inbound quorum
requests (parking Fetches the node holds until data or timeout) and puts what
each Output says became committed (``Output.committed``: batches, snapshots to
load, leader changes) on the node's ``committed`` queue, in order, for the
node's CommitApplier (server/commit_applier.py) to apply: nothing is applied
inside a Raft call.  Time is the wall clock in milliseconds.

Persistence (the node's Ready contract): what an Output asks to persist (the
quorum-state to write, the log to flush) goes to ONE writer thread for the
metadata log dir, so writes stay in order and no fsync runs on the event loop.
The Output's requests and answers - and those of every later Output - are
released only when that write is done (persist before send); a finished flush is
reported back with ``handle_log_flushed`` so the leader counts its own log.  A
failed write is fatal for the quorum replica: its messages are never sent.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tierlog.clock import wall_clock_ms
from tierlog.net.client import Peers, PeerUnavailable
from tierlog.net.tasks import cancel_and_wait
from tierlog.protocol.api import ApiKey
from tierlog.raft import wire
from tierlog.raft.committed import Committed
from tierlog.raft.node import Output, RaftNode

from .quorum_endpoints import QuorumEndpoints

__all__ = ["RaftDriver"]

log = logging.getLogger(__name__)
TICK_MAX_S = 1.0


class RaftDriver:
    def __init__(self, peers: Peers, request_timeout_s: float, node: RaftNode,
                 committed: asyncio.Queue[Committed], listener_name: str = "CONTROLLER"):
        self.peers = peers
        self._endpoints = QuorumEndpoints(peers, node, listener_name)   # KIP-853: a dynamic quorum's addresses
        self.request_timeout_s = request_timeout_s
        self.node = node
        self._committed = committed
        self._parked: dict[int, asyncio.Future] = {}
        self._wake = asyncio.Event()
        self._deadline_ms = 0
        self._task: asyncio.Task | None = None
        self._sends: set[asyncio.Task] = set()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="raft-writer")
        self._written: asyncio.Future | None = None   # the last write handed to the writer
        self._held = 0                                # Outputs waiting for a write
        self._write_failed = False
        self._hw_waiters: list[tuple[int, asyncio.Future]] = []   # (offset, future): until the HW passes it

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Resign leadership (EndQuorumEpoch) and stop the timer loop."""
        if self._task is not None:
            self._apply(self.node.resign(wall_clock_ms()))
            await self.flushed()
            await asyncio.sleep(0.05)     # let the EndQuorumEpoch requests leave
        await cancel_and_wait([t for t in (self._task, *self._sends) if t is not None], "raft driver")
        self._writer.shutdown(wait=True)

    def share_endpoints(self, peers: Peers) -> None:
        """``peers`` (a controller channel's) follows the quorum's addresses as this replica learns them."""
        self._endpoints.share_with(peers)

    def applied(self, next_offset: int) -> None:
        """The node applied every committed item below ``next_offset`` (CommitApplier, after each
        turn): the core hands out more if it held back for that (``RaftNode.handle_applied``)."""
        self._apply(self.node.handle_applied(next_offset, wall_clock_ms()))

    async def flushed(self) -> None:
        """Until every write handed to the writer so far is done."""
        if self._written is not None:
            await asyncio.wait([self._written])

    async def _run(self) -> None:
        while True:
            self._apply(self.node.tick(wall_clock_ms()))
            delay = max(0.0, min(TICK_MAX_S, (self._deadline_ms - wall_clock_ms()) / 1000))
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except TimeoutError:
                pass

    def _apply(self, out: Output, answer: asyncio.Future | None = None, response: object = None) -> None:
        """Hand over what became committed, persist (off the loop), then release the messages;
        ``answer`` gets ``response`` (an inbound request's immediate answer) on release."""
        for item in out.committed:          # committed is durable on a majority: no need to wait
            self._committed.put_nowait(item)
        self._endpoints.follow_voters()
        self._endpoints.follow_leader()
        if out.must_persist:
            self._write(out)
        if self._held or (self._written is not None and not self._written.done()):
            self._held += 1
            written = self._written
            assert written is not None
            written.add_done_callback(lambda w: self._release_held(w, out, answer, response))
        else:
            self._release(out, answer, response)
        self._deadline_ms = out.next_deadline_ms
        if out.next_deadline_ms <= wall_clock_ms() + 1:
            self._wake.set()
        if self._hw_waiters:
            self._release_committed()

    def _release_committed(self) -> None:
        waiting, self._hw_waiters = self._hw_waiters, []
        for offset, fut in waiting:
            if self.node.high_watermark > offset:
                if not fut.done():
                    fut.set_result(None)
            elif not fut.done():
                self._hw_waiters.append((offset, fut))

    def _write(self, out: Output) -> None:
        raft, state, flush = self.node, out.quorum_state, out.flush_log_to is not None

        def write() -> None:  # on the writer thread
            if state is not None:
                raft.quorum.store.write(state)
            if flush:
                raft.log.flush()

        self._written = asyncio.get_running_loop().run_in_executor(self._writer, write)
        if flush:
            self._written.add_done_callback(self._log_flushed)

    def _log_flushed(self, written: asyncio.Future) -> None:
        if not written.cancelled() and written.exception() is None:
            self._apply(self.node.handle_log_flushed(wall_clock_ms()))

    def _release_held(self, written: asyncio.Future, out: Output, answer, response) -> None:
        self._held -= 1
        if written.cancelled() or written.exception() is not None:
            if not self._write_failed:
                self._write_failed = True
                log.critical("quorum state / metadata log write failed; this replica stops sending",
                             exc_info=None if written.cancelled() else written.exception())
            return
        self._release(out, answer, response)

    def _release(self, out: Output, answer: asyncio.Future | None, response: object) -> None:
        if self._write_failed:
            return
        loop = asyncio.get_running_loop()
        for dest, request in out.sends:
            task = loop.create_task(self._send(dest, request))
            self._sends.add(task)
            task.add_done_callback(self._sends.discard)
        for token, parked_response in out.responses:
            fut = self._parked.pop(token, None)
            if fut is not None and not fut.done():
                fut.set_result(parked_response)
        if answer is not None and not answer.done():
            answer.set_result(response)

    async def _send(self, dest: int, request) -> None:
        api_key, body = wire.request_to_dict(request)
        try:
            resp = await self.peers.request(dest, api_key, body, self.request_timeout_s, wire.VERSIONS[ApiKey(api_key)])
            response = wire.response_from_dict(api_key, resp)
            if api_key == ApiKey.FETCH:
                self._endpoints.learn(resp)
        except (TimeoutError, PeerUnavailable) as e:
            log.debug("quorum request %s to node %d failed: %s", type(request).__name__, dest, e)
            self._apply(self.node.handle_send_failure(dest, request, wall_clock_ms()))
            return
        self._apply(self.node.handle_response(dest, request, response, wall_clock_ms()))

    async def handle(self, api_key: int, body: dict) -> dict:
        """Answer one inbound quorum request (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
        FetchSnapshot) with the response dict; one that does not name our partition gets
        INVALID_REQUEST."""
        try:
            request = wire.request_from_dict(api_key, body)
        except wire.InvalidQuorumRequest as e:
            log.info("answering INVALID_REQUEST: %s", e)
            return wire.invalid_request_response(api_key)
        outcome = self.node.handle_request(_sender(request), request, wall_clock_ms())
        fut = asyncio.get_running_loop().create_future()
        if outcome.response is None:
            assert outcome.token is not None        # parked: its answer comes under this token
            self._parked[outcome.token] = fut
            self._apply(outcome.output)
        else:
            self._apply(outcome.output, fut, outcome.response)   # answered once persisted
        response = await fut
        body = wire.response_to_dict(response)[1]
        if api_key == ApiKey.FETCH:
            body["NodeEndpoints"] = self._endpoints.leader_endpoints(response.leader_id)
        return body

    def propose(self, records: list[bytes], epoch: int | None = None) -> int:
        """Append records (as leader of ``epoch``, when given) now; returns the offset of the last one."""
        now = wall_clock_ms()
        last = self.node.propose(records, now, epoch)
        self._apply(self.node.tick(now))
        return last


    def change_voters(self, change: Callable[[int], tuple[int, int | None]]) -> tuple[int, int | None]:
        """One KIP-853 voter change at the leader now (``RaftNode.add_voter`` / ``remove_voter``
        called with the time): its (error, offset of the VotersRecord), the record on its way."""
        now = wall_clock_ms()
        result = change(now)
        self._apply(self.node.tick(now))
        return result

    async def committed(self, offset: int, timeout_s: float) -> None:
        """Until the quorum's high watermark passes ``offset`` (TimeoutError after ``timeout_s``)."""
        if self.node.high_watermark > offset:
            return
        fut = asyncio.get_running_loop().create_future()
        self._hw_waiters.append((offset, fut))
        try:
            await asyncio.wait_for(fut, timeout_s)
        finally:
            self._hw_waiters = [(o, f) for o, f in self._hw_waiters if f is not fut]


def _sender(request) -> int:
    for name in ("replica_id", "candidate_id", "leader_id"):
        value = getattr(request, name, None)
        if value is not None:
            return value
    return -1

