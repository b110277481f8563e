"""Structures AddRaftVoter and UpdateRaftVoter share (KIP-853). Not an API: not in ``APIS``."""

from tierlog.protocol.schema import Field, Struct

__all__ = ["VOTER_LISTENER", "voter_change_response"]

# A voter's endpoints, by listener name (Kafka's mapKey: one per name)
VOTER_LISTENER = Struct([
    Field("Name", "string"),
    Field("Host", "string"),
    Field("Port", "uint16"),
], name="Listener")


def voter_change_response(message: str) -> Struct:
    """AddRaftVoter's and RemoveRaftVoter's answer (``message`` names the struct)."""
    return Struct([
        Field("ThrottleTimeMs", "int32"),
        Field("ErrorCode", "int16"),
        Field("ErrorMessage", "string", nullable="0+", default=None),
    ], name=f"{message}Response")
