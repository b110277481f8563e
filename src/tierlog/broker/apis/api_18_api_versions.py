"""ApiVersions (18), v0-4: the APIs and versions this node serves, from the handler registry.

An unsupported request version is answered by the dispatcher (v0, UNSUPPORTED_VERSION).
Feature flags (SupportedFeatures/FinalizedFeatures) are left empty.
"""
API_KEY, MIN_VERSION, MAX_VERSION = 18, 0, 4


def handle(broker, header, request):
    return {"ErrorCode": 0, "ApiKeys": broker.api_versions, "ThrottleTimeMs": 0}
