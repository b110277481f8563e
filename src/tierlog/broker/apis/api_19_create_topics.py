"""CreateTopics (19), v2-7: validated creation through the metadata store.

NumPartitions/ReplicationFactor of -1 take ``num.partitions`` and
``default.replication.factor``.  Manual Assignments are refused with
INVALID_REQUEST for now (placement is automatic).  v5+ answers the topic's
partition count, replication factor and configs; v7 its topic id.
"""
from tierlog.protocol.errors import ErrorCode

from ..topic_admin import TopicAdminError, create_topic
from .api_32_describe_configs import topic_config_entries

API_KEY, MIN_VERSION, MAX_VERSION = 19, 2, 7


def handle(broker, header, request):
    validate_only = request.get("validateOnly", False)      # Kafka spells this one lower camel case
    seen, results = set(), []
    for t in request["Topics"]:
        results.append(_one(broker, t, validate_only, duplicate=t["Name"] in seen))
        seen.add(t["Name"])
    return {"ThrottleTimeMs": 0, "Topics": results}


def _one(broker, t, validate_only, duplicate) -> dict:
    out = {"Name": t["Name"], "TopicId": bytes(16), "ErrorCode": 0, "ErrorMessage": None,
           "NumPartitions": -1, "ReplicationFactor": -1, "Configs": None}
    configs = {c["Name"]: c["Value"] for c in t["Configs"]}
    try:
        if duplicate:
            raise TopicAdminError(ErrorCode.INVALID_REQUEST, f"Topic '{t['Name']}' appears twice in the request.")
        if t["Assignments"]:
            raise TopicAdminError(ErrorCode.INVALID_REQUEST, "Manual replica assignments are not supported yet.")
        topic = create_topic(broker, t["Name"], t["NumPartitions"], t["ReplicationFactor"], configs, validate_only)
    except TopicAdminError as e:
        out["ErrorCode"], out["ErrorMessage"] = e.error_code, str(e)
        return out
    if topic is not None:
        out["TopicId"] = topic.topic_id
        out["NumPartitions"] = len(topic.partitions)
        out["ReplicationFactor"] = len(topic.partitions[0].replicas)
        out["Configs"] = [{"Name": e["Name"], "Value": e["Value"], "ReadOnly": False,
                           "ConfigSource": e["ConfigSource"], "IsSensitive": False}
                          for e in topic_config_entries(broker, topic)]
    return out
