"""The Kafka wire protocol: primitives, declarative schemas, one codec engine,
headers, the API registry and Kafka's error codes.

Message values are plain dicts keyed by Kafka's field names (PascalCase, as in
Kafka's message specs); ``uuid`` values are 16-byte ``bytes``; ``records``
decode to zero-copy ``memoryview`` slices.
"""

from tierlog.protocol.api import ApiKey, ApiSpec
from tierlog.protocol.codec import Output, decode_struct, encode_struct, plan_for
from tierlog.protocol.errors import ErrorCode, describe, is_retriable
from tierlog.protocol.header import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
)
from tierlog.protocol.messages import APIS
from tierlog.protocol.primitives import ProtocolError
from tierlog.protocol.schema import Field, Struct
from tierlog.protocol.wire import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

__all__ = [
    "APIS", "ApiKey", "ApiSpec", "ErrorCode", "Field", "Output",
    "ProtocolError", "RequestHeader", "Struct", "decode_request",
    "decode_request_header", "decode_response", "decode_response_header",
    "decode_struct", "describe", "encode_request", "encode_request_header",
    "encode_response", "encode_response_header", "encode_struct",
    "is_retriable", "plan_for",
]
