"""RemoveRaftVoter (key 81), version 0, flexible (KIP-853).

Removes the voter (VoterId, VoterDirectoryId) from the metadata quorum; answered once
the new voter set is committed. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

from .raft_voter_common import voter_change_response

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

REQUEST = Struct([
    Field("ClusterId", "string", nullable="0+", default=None),
    Field("VoterId", "int32"),
    Field("VoterDirectoryId", "uuid"),
], name="RemoveRaftVoterRequest")

RESPONSE = voter_change_response("RemoveRaftVoter")

SPEC = ApiSpec(ApiKey.REMOVE_RAFT_VOTER, "RemoveRaftVoter", 0, 0, 0, REQUEST, RESPONSE)
