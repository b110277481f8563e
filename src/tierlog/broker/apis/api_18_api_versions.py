"""ApiVersions (18), v0-4: the APIs and versions this node serves, from the handler registry.

An unsupported request version is answered by the dispatcher (v0, UNSUPPORTED_VERSION).
Feature flags (SupportedFeatures/FinalizedFeatures) are left empty.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.API_VERSIONS, 0, 4


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    return {"ErrorCode": ErrorCode.NONE, "ApiKeys": broker.api_versions, "ThrottleTimeMs": 0}
