"""Forwarding of admin requests to the active controller (Kafka's KIP-590 path).

Our brokers send the client's request, at the client's version, straight to
the active controller over the controller listener and relay its answer.  If
no controller answers in time the client gets REQUEST_TIMED_OUT per item.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tierlog.broker.controller_channel import ControllerUnavailable
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

__all__ = ["FORWARD_TIMEOUT_S", "TIMED_OUT_MESSAGE", "catch_up", "forward_and_catch_up", "forward_and_wait"]

FORWARD_TIMEOUT_S = 30.0
IMAGE_WAIT_MAX_S = 10.0
TIMED_OUT_MESSAGE = "No active controller answered in time."


async def _forward(broker, header, request: Mapping[str, Any]) -> Any:
    """The controller's answer, decoded from the wire (untyped: it has the shape of the
    request's response, which the caller declares), or None if no controller answered."""
    try:
        # a client's admin request is sent once per controller: see ControllerChannel
        return await broker.controller_channel.send(header.api_key, request, FORWARD_TIMEOUT_S, header.api_version,
                                            resend_after_timeout=False)
    except ControllerUnavailable:
        return None


def _wait_s(timeout_ms: int) -> float:
    return min(IMAGE_WAIT_MAX_S, timeout_ms / 1000) if timeout_ms > 0 else IMAGE_WAIT_MAX_S


async def forward_and_wait(broker, header, request: Mapping[str, Any], condition, timeout_ms: int,
                           timed_out=None) -> Any:
    """Forward; then wait until ``condition(response)(image)`` holds on this broker.

    ``timed_out(request)``: the answer when no controller answers (default: the
    shapes of CreateTopics, DeleteTopics and IncrementalAlterConfigs).
    """
    response = await _forward(broker, header, request)
    if response is None:
        return (timed_out or (lambda r: _timed_out(header.api_key, r)))(request)
    if condition is not None:
        await broker.metadata.wait_for(condition(response), _wait_s(timeout_ms))
    return response


async def forward_and_catch_up(broker, header, request: Mapping[str, Any], timed_out=None) -> Any:
    """Forward; then wait until this broker's image reaches the quorum's high watermark."""
    response = await _forward(broker, header, request)
    if response is None:
        return (timed_out or (lambda r: _timed_out(header.api_key, r)))(request)
    await catch_up(broker)
    return response


async def catch_up(broker, timeout_s: float = 5.0, image_wait_s: float = IMAGE_WAIT_MAX_S) -> None:
    """Until this broker's image reaches the quorum's high watermark, as the active
    controller reports it (one DescribeQuorum round trip), or ``image_wait_s``; at
    once if no controller answers within ``timeout_s``."""
    body = {"Topics": [{"TopicName": "__cluster_metadata", "Partitions": [{"PartitionIndex": 0}]}]}
    try:
        quorum = await broker.controller_channel.send(ApiKey.DESCRIBE_QUORUM, body, timeout_s, 0)
    except ControllerUnavailable:
        return
    hw = quorum["Topics"][0]["Partitions"][0]["HighWatermark"]
    await broker.metadata.wait_for(lambda image: image.provenance.end_offset >= hw, image_wait_s)


def _timed_out(api_key: int, request: Mapping[str, Any]) -> dict:
    code, msg = ErrorCode.REQUEST_TIMED_OUT, TIMED_OUT_MESSAGE
    if api_key == ApiKey.CREATE_TOPICS:
        return {"ThrottleTimeMs": 0, "Topics": [
            {"Name": t["Name"], "TopicId": bytes(16), "ErrorCode": code, "ErrorMessage": msg, "NumPartitions": -1,
             "ReplicationFactor": -1, "Configs": None} for t in request["Topics"]]}
    if api_key == ApiKey.DELETE_TOPICS:
        names = [t.get("Name") for t in request.get("Topics") or []] or request.get("TopicNames") or []
        return {"ThrottleTimeMs": 0, "Responses": [
            {"Name": n, "TopicId": bytes(16), "ErrorCode": code, "ErrorMessage": msg} for n in names]}
    return {"ThrottleTimeMs": 0, "Responses": [
        {"ErrorCode": code, "ErrorMessage": msg, "ResourceType": r["ResourceType"],
         "ResourceName": r["ResourceName"]} for r in request["Resources"]]}
