"""The leader's view of the ISR: committed, or with one AlterPartition proposal pending.

States (Kafka's ``CommittedPartitionState`` / ``PendingExpandIsr`` /
``PendingShrinkIsr``, plus our KIP-1303 report-only proposal):

    COMMITTED  the controller's ISR; no proposal
    PENDING    one proposal (expand, shrink or report), waiting to be sent,
               in flight, or waiting out a retry backoff
    STUCK      the controller rejected the proposal as stale
               (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
               UNKNOWN_TOPIC_OR_PARTITION, NEW_LEADER_ELECTED, INVALID_REQUEST):
               nothing more is proposed until a metadata update arrives

Transitions:

    COMMITTED -propose-> PENDING
    PENDING -take (send)-> PENDING in flight
    PENDING in flight -success-> COMMITTED (ISR and partition epoch of the response)
    PENDING in flight -retriable error / lost reply-> PENDING (retry after backoff)
    PENDING in flight -INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED-> COMMITTED
        (the controller certainly did not apply it: safe to drop)
    PENDING in flight -stale error-> STUCK
    any -metadata with a newer partition epoch-> COMMITTED

Only one proposal exists at a time.  The *maximal ISR* (Kafka's rule) is what
the high watermark must wait for: the committed ISR plus a replica being
added (an expansion may already be applied by the controller), and still
including a replica being removed (a shrink is not applied until confirmed).
So a proposal in any outcome never lets the high watermark pass a record
that some member of the controller's ISR lacks.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .alter_partition import AlterPartitionItem

__all__ = ["IsrState", "Proposal", "ProposalKind"]


class ProposalKind(Enum):
    EXPAND = "expand"
    SHRINK = "shrink"
    REPORT = "report"


@dataclass(slots=True)
class Proposal:
    kind: ProposalKind
    new_isr: tuple[int, ...]
    attempts: int = 0
    in_flight: bool = False
    retry_at_ms: int = 0
    stuck: bool = False
    sent: AlterPartitionItem | None = None


class IsrState:
    def __init__(self, isr: tuple[int, ...], partition_epoch: int) -> None:
        self.isr = tuple(isr)                    # committed
        self.partition_epoch = partition_epoch
        self.proposal: Proposal | None = None

    @property
    def state(self) -> str:
        if self.proposal is None:
            return "COMMITTED"
        return "STUCK" if self.proposal.stuck else "PENDING"

    @property
    def maximal_isr(self) -> frozenset[int]:
        isr = frozenset(self.isr)
        if self.proposal is not None and self.proposal.kind is ProposalKind.EXPAND:
            return isr | frozenset(self.proposal.new_isr)
        return isr

    def propose(self, kind: ProposalKind, new_isr: tuple[int, ...]) -> None:
        assert self.proposal is None, f"proposal already pending: {self.proposal}"
        assert new_isr, "an ISR is never empty"
        self.proposal = Proposal(kind, tuple(new_isr))

    def ready_to_send(self, now_ms: int) -> bool:
        p = self.proposal
        return p is not None and not p.in_flight and not p.stuck and now_ms >= p.retry_at_ms

    def mark_sent(self, item: AlterPartitionItem) -> None:
        p = self.proposal
        assert p is not None and not p.in_flight and not p.stuck, p
        p.in_flight, p.sent = True, item
        p.attempts += 1

    def commit(self, isr: tuple[int, ...], partition_epoch: int) -> None:
        self.isr, self.partition_epoch, self.proposal = tuple(isr), partition_epoch, None

    def drop(self) -> None:
        assert self.proposal is not None
        self.proposal = None

    def retry_later(self, retry_at_ms: int) -> None:
        p = self.proposal
        assert p is not None and p.in_flight, p
        p.in_flight, p.retry_at_ms = False, retry_at_ms

    def get_stuck(self) -> None:
        p = self.proposal
        assert p is not None, "stuck without a proposal"
        p.in_flight, p.stuck = False, True
