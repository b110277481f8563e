"""Log divergence: the leader's DivergingEpoch check and the follower's truncation offset.

Leader side (Kafka's ``Partition.readRecords`` for a fetch carrying
LastFetchedEpoch, KIP-595/KIP-320): look up (epoch, end offset) of the largest
epoch <= LastFetchedEpoch in the leader's epoch cache.  If that is unknown, or
the fetch offset is below the log start offset, answer OFFSET_OUT_OF_RANGE.  If
the epoch found is smaller than LastFetchedEpoch, or its end offset is below
the fetch offset, the follower's log diverges: answer DivergingEpoch = (epoch,
end offset), no records, and do NOT update the follower's state.  Without a
LastFetchedEpoch a fetch offset outside [log start, LEO] is OFFSET_OUT_OF_RANGE.

Follower side (Kafka's ``AbstractFetcherThread`` truncation rule): given the
leader's DivergingEpoch (E, O), look up the follower's own (epoch, end offset)
for E in its epoch cache:

- unknown locally (-1): truncate to min(O, local LEO);
- the local epoch found equals E: truncate to min(O, local end offset of E, LEO);
- it is a smaller epoch e < E (the follower never saw E): truncate to
  min(local end offset of e, LEO); the next fetch carries e as LastFetchedEpoch
  and the leader answers again, so truncation converges in a few round trips.

OffsetForLeaderEpoch is not used: every leader we talk to supports
LastFetchedEpoch (Fetch >= 12), so truncation always rides on Fetch responses.
"""
from __future__ import annotations

from dataclasses import dataclass

from tierlog.protocol.errors import ErrorCode

__all__ = ["DivergenceCheck", "check_follower_fetch", "truncation_offset"]

UNDEFINED = -1


@dataclass(frozen=True, slots=True)
class DivergenceCheck:
    error: int = ErrorCode.NONE                 # NONE or OFFSET_OUT_OF_RANGE
    diverging_epoch: int = UNDEFINED            # set when the follower must truncate
    diverging_end_offset: int = UNDEFINED

    @property
    def diverging(self) -> bool:
        return self.diverging_epoch != UNDEFINED


def check_follower_fetch(fetch_offset: int, last_fetched_epoch: int, log_start_offset: int,
                         log_end_offset: int, epoch_end: tuple[int, int]) -> DivergenceCheck:
    """Leader: validate a follower's (FetchOffset, LastFetchedEpoch).

    ``epoch_end`` is the leader log's ``end_offset_for_epoch(last_fetched_epoch)``;
    ignored when ``last_fetched_epoch`` is -1 (a follower without epochs).
    """
    if last_fetched_epoch == UNDEFINED:
        if not log_start_offset <= fetch_offset <= log_end_offset:
            return DivergenceCheck(error=ErrorCode.OFFSET_OUT_OF_RANGE)
        return DivergenceCheck()
    epoch, end_offset = epoch_end
    if epoch == UNDEFINED or end_offset == UNDEFINED or fetch_offset < log_start_offset:
        return DivergenceCheck(error=ErrorCode.OFFSET_OUT_OF_RANGE)
    if epoch < last_fetched_epoch or end_offset < fetch_offset:
        return DivergenceCheck(diverging_epoch=epoch, diverging_end_offset=end_offset)
    return DivergenceCheck()


def truncation_offset(diverging_epoch: int, diverging_end_offset: int,
                      local_epoch_end: tuple[int, int], log_end_offset: int) -> int:
    """Follower: where to truncate given the leader's DivergingEpoch.

    ``local_epoch_end`` is the follower log's ``end_offset_for_epoch(diverging_epoch)``.
    """
    assert diverging_epoch >= 0 and diverging_end_offset >= 0, (diverging_epoch, diverging_end_offset)
    local_epoch, local_end = local_epoch_end
    if local_epoch == UNDEFINED or local_end == UNDEFINED:
        return min(diverging_end_offset, log_end_offset)
    if local_epoch == diverging_epoch:
        return min(diverging_end_offset, local_end, log_end_offset)
    assert local_epoch < diverging_epoch, (local_epoch, diverging_epoch)
    return min(local_end, log_end_offset)
