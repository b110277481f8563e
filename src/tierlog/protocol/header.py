"""Request and response headers.

Request header v1: RequestApiKey int16, RequestApiVersion int16, CorrelationId
int32, ClientId nullable string (int16 length). v2 adds a tagged-field section
but keeps ClientId's int16 length. A request uses v2 when its API version is
flexible, else v1.

Response header v0: CorrelationId int32; v1 adds a tagged-field section. A
response uses v1 when flexible, except ApiVersions responses (always v0).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from tierlog.protocol.messages import APIS
from tierlog.protocol.primitives import (
    EMPTY_TAGGED_FIELDS,
    INT32,
    Buffer,
    ProtocolError,
    decode_nullable_string,
    encode_string,
    skip_tagged_fields,
)

__all__ = [
    "RequestHeader",
    "decode_request_header",
    "decode_response_header",
    "encode_request_header",
    "encode_response_header",
]

_REQUEST_PREFIX = struct.Struct(">hhi")


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    listener: str | None = None     # not on the wire: the listener it came in on (set by the dispatcher)
    client_host: str = ""           # not on the wire: the client's IP address (set by the dispatcher)
    principal: str = "User:ANONYMOUS"   # not on the wire: who sent it (SASL / TLS; set by the dispatcher)


def encode_request_header(api_key: int, api_version: int, correlation_id: int,
                          client_id: str | None, header_version: int) -> bytes:
    """Request header v1 or v2 (v2 = v1 + an empty tagged-field section)."""
    head = _REQUEST_PREFIX.pack(api_key, api_version, correlation_id) + encode_string(client_id)
    return head + EMPTY_TAGGED_FIELDS if header_version >= 2 else head


#: api key -> (lowest version, highest version, first flexible version) of every API with a schema
_HEADER_VERSIONS = {int(key): (spec.min_version, spec.max_version, spec.flexible_from) for key, spec in APIS.items()}
_ANONYMOUS = "User:ANONYMOUS"


def decode_request_header(buf: Buffer, listener: str | None = None, client_host: str = "",
                          principal: str = _ANONYMOUS) -> tuple[RequestHeader, int]:
    """Decode the header of one request frame (without its size prefix); ``listener``,
    ``client_host`` and ``principal`` (not on the wire) go into the header as they are.

    Returns the header and the offset of the body. For an API key or version
    without a schema only the v1 fields are read (the caller answers
    UNSUPPORTED_VERSION or closes); the offset is then past those fields.
    """
    try:
        api_key, api_version, correlation_id = _REQUEST_PREFIX.unpack_from(buf, 0)
        client_id, pos = decode_nullable_string(buf, _REQUEST_PREFIX.size)
        versions = _HEADER_VERSIONS.get(api_key)
        if versions is not None and versions[0] <= api_version <= versions[1] and api_version >= versions[2]:
            pos = pos + 1 if buf[pos] == 0 else skip_tagged_fields(buf, pos)     # header v2: its tag section
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"truncated or malformed request header: {exc}") from exc
    return RequestHeader(api_key, api_version, correlation_id, client_id, listener, client_host, principal), pos


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    head = INT32.pack(correlation_id)
    return head + EMPTY_TAGGED_FIELDS if header_version >= 1 else head


def decode_response_header(buf: Buffer, header_version: int) -> tuple[int, int]:
    """(correlation id, offset of the body) of one response frame."""
    try:
        (correlation_id,) = INT32.unpack_from(buf, 0)
        pos = 4
        if header_version >= 1:
            pos = skip_tagged_fields(buf, pos)
    except (struct.error, IndexError) as exc:
        raise ProtocolError(f"truncated response header: {exc}") from exc
    return correlation_id, pos
