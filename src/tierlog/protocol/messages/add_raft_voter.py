"""AddRaftVoter (key 80), versions 0-1, flexible from 0 (KIP-853).

Sent to the active controller (or a broker, which forwards it) to make a replica that
has caught up as an observer a voter of the metadata quorum. v1 adds
AckWhenCommitted (default true: answer once the new voter set is committed; false:
once the leader wrote it). The response is the same at every version. Nothing is
left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .raft_voter_common import VOTER_LISTENER, voter_change_response

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", default=None),
    Field("TimeoutMs", "int32"),
    Field("VoterId", "int32"),
    Field("VoterDirectoryId", "uuid"),
    Field("Listeners", [VOTER_LISTENER]),
    Field("AckWhenCommitted", "bool", versions="1+", default=True),
], name="AddRaftVoterRequest")

RESPONSE = voter_change_response("AddRaftVoter")

SPEC = ApiSpec(ApiKey.ADD_RAFT_VOTER, "AddRaftVoter", 0, 1, 0, REQUEST, RESPONSE)
