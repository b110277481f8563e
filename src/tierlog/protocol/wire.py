"""Whole messages: header + body of a request or response, without the
4-byte size prefix that the transport adds and strips."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tierlog.protocol.api import ApiSpec
from tierlog.protocol.codec import Output, decode_struct, encode_struct
from tierlog.protocol.header import (
    decode_response_header,
    encode_request_header,
    encode_response_header,
)
from tierlog.protocol.messages import APIS
from tierlog.protocol.primitives import Buffer, ProtocolError

__all__ = ["decode_request", "decode_response", "encode_request", "encode_response"]


def _spec(api_key: int, api_version: int) -> ApiSpec | None:
    spec = APIS.get(api_key)
    if spec is None or not spec.supports(api_version):
        return None
    return spec


def _spec_to_encode(api_key: int, api_version: int) -> ApiSpec:
    spec = _spec(api_key, api_version)
    if spec is None:
        raise ValueError(f"no schema for api key {api_key} version {api_version}")
    return spec


def _spec_to_decode(api_key: int, api_version: int) -> ApiSpec:
    spec = _spec(api_key, api_version)
    if spec is None:
        raise ProtocolError(f"no schema for api key {api_key} version {api_version}")
    return spec


def _view(buf: Buffer) -> memoryview:
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def encode_request(api_key: int, api_version: int, correlation_id: int,
                   client_id: str | None, body: Mapping[str, Any]) -> bytes:
    """Header + body of a request; records parts must be bytes-like here."""
    spec = _spec_to_encode(api_key, api_version)
    out = Output()
    out += encode_request_header(api_key, api_version, correlation_id, client_id,
                                 spec.request_header_version(api_version))
    encode_struct(spec.request, api_version, spec.is_flexible(api_version), body, out)
    if not out.splices:
        return bytes(out)
    parts = out.parts()
    if not all(isinstance(p, (bytes, bytearray, memoryview)) for p in parts):
        raise TypeError("a request cannot carry opaque (file region) parts")
    return b"".join(parts)


def decode_request(api_key: int, api_version: int, buf: Buffer, offset: int) -> dict[str, Any]:
    """The body of a request frame, starting at ``offset`` (after the header)."""
    spec = _spec_to_decode(api_key, api_version)
    body, _ = decode_struct(spec.request, api_version, spec.is_flexible(api_version),
                            _view(buf), offset)
    return body


def encode_response(api_key: int, api_version: int, correlation_id: int,
                    body: Mapping[str, Any]) -> list[Any]:
    """Header + body of a response as a list of parts (see Output.parts)."""
    spec = _spec_to_encode(api_key, api_version)
    out = Output()
    out += encode_response_header(correlation_id, spec.response_header_version(api_version))
    encode_struct(spec.response, api_version, spec.is_flexible(api_version), body, out)
    return out.parts()


def decode_response(api_key: int, api_version: int, buf: Buffer) -> tuple[int, dict[str, Any]]:
    """(correlation id, body) of a response frame."""
    spec = _spec_to_decode(api_key, api_version)
    view = _view(buf)
    correlation_id, pos = decode_response_header(view, spec.response_header_version(api_version))
    body, _ = decode_struct(spec.response, api_version, spec.is_flexible(api_version), view, pos)
    return correlation_id, body
