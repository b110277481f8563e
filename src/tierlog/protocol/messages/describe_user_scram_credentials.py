"""DescribeUserScramCredentials (key 50), v0, flexible (KIP-554).

Users named (null or empty: every user) -> each one's mechanisms and iteration
counts, never a salt or key. Nothing is left out.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.schema import Field, Struct

__all__ = ["REQUEST", "RESPONSE", "SPEC"]

_USER_NAME = Struct([Field("Name", "string")], name="UserName")

REQUEST = Struct([
    Field("Users", [_USER_NAME], nullable="0+", default=None),
], name="DescribeUserScramCredentialsRequest")

_CREDENTIAL_INFO = Struct([
    Field("Mechanism", "int8"), Field("Iterations", "int32"),
], name="CredentialInfo")

_DESCRIBE_RESULT = Struct([
    Field("User", "string"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("CredentialInfos", [_CREDENTIAL_INFO]),
], name="DescribeUserScramCredentialsResult")

RESPONSE = Struct([
    Field("ThrottleTimeMs", "int32"),
    Field("ErrorCode", "int16"),
    Field("ErrorMessage", "string", nullable="0+", default=None),
    Field("Results", [_DESCRIBE_RESULT]),
], name="DescribeUserScramCredentialsResponse")

SPEC = ApiSpec(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, 0, 0, REQUEST, RESPONSE)
