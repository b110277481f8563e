"""The ACL checks of the broker's APIs in one place (Kafka's ``AuthHelper``).

Handlers ask ``topic`` / ``group`` / ``cluster`` / ``transactional_id`` (or
``allowed_topics`` for a set of names) with the request header: the header carries
the principal (SASL / TLS, ``User:ANONYMOUS`` otherwise) and the client's address,
and the image carries the ACLs. Without an authorizer (``authorizer.class.name``
unset) every check passes, as in Kafka. ``authorized_operations`` is the bit set of a
resource type's operations the principal may do (Metadata's and DescribeCluster's
``*AuthorizedOperations``; every supported operation without an authorizer, as Kafka).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tierlog.metadata.acls import CLUSTER_NAME, AclOperation, ResourceType
from tierlog.metadata.authorizer import operations_bitfield
from tierlog.protocol.errors import ErrorCode, describe
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

__all__ = [
    "allowed_topics",
    "any_topic",
    "authorized_operations",
    "cluster",
    "config_refusal",
    "forward_acl_write",
    "forward_allowed",
    "forward_configs",
    "group",
    "topic",
    "transactional_id",
]

Op = AclOperation

#: Kafka's ``AclEntry.supportedOperations`` per resource type
SUPPORTED_OPERATIONS = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
                         Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                           Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
}


def allowed(broker: HandlerContext, header: RequestHeader, op: int, resource_type: int, name: str) -> bool:
    a = broker.authorizer
    return a is None or a.authorize(broker.image.acls, header.principal, header.client_host, op, resource_type, name)


def topic(broker: HandlerContext, header: RequestHeader, op: int, name: str) -> bool:
    return allowed(broker, header, op, ResourceType.TOPIC, name)


def group(broker: HandlerContext, header: RequestHeader, op: int, name: str) -> bool:
    return allowed(broker, header, op, ResourceType.GROUP, name)


def cluster(broker: HandlerContext, header: RequestHeader, op: int) -> bool:
    return allowed(broker, header, op, ResourceType.CLUSTER, CLUSTER_NAME)


def transactional_id(broker: HandlerContext, header: RequestHeader, op: int, name: str) -> bool:
    return allowed(broker, header, op, ResourceType.TRANSACTIONAL_ID, name)


def allowed_topics(broker: HandlerContext, header: RequestHeader, op: int, names: Iterable[str]) -> set[str]:
    """The names (each checked once) the principal may ``op``."""
    if broker.authorizer is None:
        return set(names)
    return {n for n in set(names) if topic(broker, header, op, n)}


def any_topic(broker: HandlerContext, header: RequestHeader, op: int) -> bool:
    """Kafka's ``authorizeByResourceType(TOPIC, op)`` (KIP-679: idempotent producers)."""
    a = broker.authorizer
    return a is None or a.authorize_any(broker.image.acls, header.principal, header.client_host, op,
                                        ResourceType.TOPIC)


def authorized_operations(broker: HandlerContext, header: RequestHeader, resource_type: int, name: str) -> int:
    ops = SUPPORTED_OPERATIONS[ResourceType(resource_type)]
    a = broker.authorizer
    if a is None:
        return operations_bitfield(ops)
    return a.authorized_operations(broker.image.acls, header.principal, header.client_host, resource_type, name, ops)


NO_AUTHORIZER = "No Authorizer is configured."


def forward_acl_write(broker: HandlerContext, header: RequestHeader, request: Mapping[str, Any], answer_all):
    """CreateAcls / DeleteAcls: SECURITY_DISABLED without an authorizer and
    CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster (for every item, as Kafka);
    else forwarded to the controller and answered once this broker's image caught up.
    ``answer_all(request, code, message)``: the answer with one code for every item."""
    from .forward import TIMED_OUT_MESSAGE, forward_and_catch_up
    if broker.authorizer is None:
        return answer_all(request, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if not cluster(broker, header, Op.ALTER):
        return answer_all(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                          describe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    return forward_and_catch_up(broker, header, request,
                                lambda r: answer_all(r, ErrorCode.REQUEST_TIMED_OUT, TIMED_OUT_MESSAGE))


async def forward_allowed(request: Mapping[str, Any], items_key: str, results_key: str, may, refused, forward) -> Any:
    """A forwarded admin request with a check per item (CreateTopics, DeleteTopics, configs, ...):
    only the items ``may(item)`` allows go to the controller (``forward(request)``, awaitable);
    each other item answers ``refused(item)``, after the controller's answers."""
    items = request[items_key]
    verdicts = [may(i) for i in items]
    if all(verdicts):
        return await forward(request)
    refusals = [refused(i) for i, ok in zip(items, verdicts) if not ok]
    allowed = [i for i, ok in zip(items, verdicts) if ok]
    if not allowed:
        return {"ThrottleTimeMs": 0, results_key: refusals}
    response = await forward({**request, items_key: allowed})
    return {**response, results_key: response[results_key] + refusals}


#: ConfigResource.Type -> (ACL resource type, the error of a refusal); brokers' configs are the cluster's
_CONFIG_RESOURCES = {2: (ResourceType.TOPIC, "TOPIC_AUTHORIZATION_FAILED"),
                     4: (ResourceType.CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),
                     8: (ResourceType.CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),
                     16: (ResourceType.CLUSTER, "CLUSTER_AUTHORIZATION_FAILED"),    # client metrics (KIP-714)
                     32: (ResourceType.GROUP, "GROUP_AUTHORIZATION_FAILED")}


def config_refusal(broker: HandlerContext, header: RequestHeader, op: int, resource: Mapping[str, Any]) -> ErrorCode | None:
    """DescribeConfigs / AlterConfigs: the error of a config resource the principal may not
    ``op`` (DESCRIBE_CONFIGS / ALTER_CONFIGS), None when allowed (or not a type with ACLs)."""
    kind = _CONFIG_RESOURCES.get(resource["ResourceType"])
    if kind is None or broker.authorizer is None:
        return None
    resource_type, error = kind
    name = CLUSTER_NAME if resource_type == ResourceType.CLUSTER else resource["ResourceName"]
    return None if allowed(broker, header, op, resource_type, name) else ErrorCode[error]


def forward_configs(broker: HandlerContext, header: RequestHeader, request: Mapping[str, Any], forward):
    """AlterConfigs / IncrementalAlterConfigs: ALTER_CONFIGS on each resource, the refused ones
    answered here, the others forwarded."""
    if broker.authorizer is None:
        return forward(request)

    def refused(r: Mapping[str, Any]) -> dict:
        return {"ErrorCode": config_refusal(broker, header, Op.ALTER_CONFIGS, r), "ErrorMessage": None,
                "ResourceType": r["ResourceType"], "ResourceName": r["ResourceName"]}
    return forward_allowed(request, "Resources", "Responses",
                           lambda r: config_refusal(broker, header, Op.ALTER_CONFIGS, r) is None, refused, forward)
