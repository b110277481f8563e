"""Pipelined requests on one connection: a handler may let the next request begin before it answers.

Kafka handles a connection's requests one at a time (the channel is muted from a request until
its response is sent), and so does ``net.server`` by default. An acks=all Produce spends most of
its time waiting for the followers, and librdkafka sends one partition per ProduceRequest with up
to ``max.in.flight.requests.per.connection`` of them outstanding: with keyed traffic over many
partitions the requests then queue behind each other's replication round trips while the
broker idles (300 partitions round-robin: under 0.9 cores busy, and the producer falls behind).

A handler calls ``release_connection()`` once the part that must happen in request order is done
(a Produce: its appends; what is left is waiting for the high watermark). The connection then
begins the next request while this one waits, and still sends every answer in request order.
Requests released and not yet answered are bounded per connection by ``queued.max.requests``.

``start(awaitable)`` runs a handler's awaitable as a task whose ``release_connection()`` resolves
the returned future (as does the task's end, whatever it is).

A handler whose ordered part is done before it returns (an acks=all Produce, appended) returns
``Released(coroutine)``: the connection begins the next request at once, with no release to wait
for and no context of its own for the task (``release_connection()`` in it does nothing).
"""
from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Coroutine

__all__ = ["Released", "release_connection", "start"]

_RELEASE: contextvars.ContextVar[asyncio.Future | None] = contextvars.ContextVar("release_connection",
                                                                               default=None)


class Released:
    """What is left of a request once its ordered part is done: a coroutine to run as a task, whose
    answer goes out in turn."""

    __slots__ = ("coroutine",)

    def __init__(self, coroutine: Coroutine):
        self.coroutine = coroutine

    def __await__(self):
        return self.coroutine.__await__()


def release_connection() -> None:
    """The request being handled needs no more ordering: the connection may begin the next one.
    Outside a pipelined request (a handler called directly, a test) it does nothing."""
    released = _RELEASE.get()
    if released is not None:
        _resolve(released)


def start(awaitable: Awaitable) -> tuple[asyncio.Task, asyncio.Future]:
    """(the task running ``awaitable``, a future done once it released the connection or ended)."""
    loop = asyncio.get_running_loop()
    released = loop.create_future()
    context = contextvars.copy_context()
    context.run(_RELEASE.set, released)
    coro = awaitable if asyncio.iscoroutine(awaitable) else _await(awaitable)
    task = loop.create_task(coro, context=context)
    task.add_done_callback(lambda _t: _resolve(released))
    return task, released


def _resolve(released: asyncio.Future) -> None:
    if not released.done():
        released.set_result(None)


async def _await(awaitable: Awaitable):
    return await awaitable
