"""The driver's offset queries, asked again on failure as Spark's Kafka source does.

Spark's ``fetchOffset.numRetries`` (default 3) and ``fetchOffset.retryIntervalMs``
(default 10): a failed query of partitions or offsets (the cluster's own retries,
bounded by ``kafka.request.timeout.ms``, spent) is asked again that many times,
that long apart; the last failure is raised with a note naming both options.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from tierlog.client import KafkaError
from tierlog.net.request_pipeline import PeerUnavailable
from tierlog.spark.options import SourceOptions

__all__ = ["with_offset_retries"]

log = logging.getLogger(__name__)
T = TypeVar("T")


def with_offset_retries(opts: SourceOptions, what: str, query: Callable[[], T],
                        sleep: Callable[[float], None] = time.sleep) -> T:
    """``query()``, asked again up to ``opts.fetch_offset_retries`` times after a KafkaError or an
    unreachable peer."""
    attempt = 0
    while True:
        try:
            return query()
        except (KafkaError, PeerUnavailable) as exc:
            if attempt >= opts.fetch_offset_retries:
                exc.add_note(f"tierlog: {what} failed {attempt + 1} time(s) (fetchOffset.numRetries="
                             f"{opts.fetch_offset_retries}, fetchOffset.retryIntervalMs="
                             f"{opts.fetch_offset_retry_interval_s * 1000:.0f})")
                raise
            attempt += 1
            log.warning("tierlog: %s failed (%s); asking again (%d of %d)", what, exc, attempt,
                        opts.fetch_offset_retries)
            sleep(opts.fetch_offset_retry_interval_s)
