"""AlterUserScramCredentials (key 51), v0, flexible (KIP-554).

Deletions (user, mechanism) and upsertions (user, mechanism, iterations, salt and
SaltedPassword: the client salts, the controller derives StoredKey and ServerKey).
Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_DELETION = Struct([
    Field("Name", "string"), Field("Mechanism", "int8"),
], name="ScramCredentialDeletion")

_UPSERTION = Struct([
    Field("Name", "string"), Field("Mechanism", "int8"), Field("Iterations", "int32"),
    Field("Salt", "bytes"), Field("SaltedPassword", "bytes"),
], name="ScramCredentialUpsertion")

REQUEST = Struct([
    Field("Deletions", [_DELETION]),
    Field("Upsertions", [_UPSERTION]),
], name="AlterUserScramCredentialsRequest")

_ALTER_RESULT = Struct([
    Field("User", "string"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
], name="AlterUserScramCredentialsResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("Results", [_ALTER_RESULT]),
], name="AlterUserScramCredentialsResponse")


SPEC = ApiSpec(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0, 0, REQUEST, RESPONSE)
