"""IncrementalAlterConfigs (44), v0-1: SET, DELETE, APPEND and SUBTRACT on topic configs.

List-typed configs (``cleanup.policy``) take APPEND/SUBTRACT; others get
INVALID_CONFIG for them.  Broker configs are static in tierlog for now:
altering one answers INVALID_REQUEST with a message saying so.
"""
from tierlog.protocol.errors import ErrorCode
from tierlog.storage import TOPIC_CONFIGS

from ..topic_admin import TopicAdminError, alter_topic_configs

API_KEY, MIN_VERSION, MAX_VERSION = 44, 0, 1
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def handle(broker, header, request):
    validate_only = request.get("ValidateOnly", False)
    return {"ThrottleTimeMs": 0, "Responses": [_one(broker, r, validate_only) for r in request["Resources"]]}


def _one(broker, r, validate_only) -> dict:
    out = {"ErrorCode": 0, "ErrorMessage": None, "ResourceType": r["ResourceType"],
           "ResourceName": r["ResourceName"]}
    try:
        if r["ResourceType"] != TOPIC:
            raise TopicAdminError(ErrorCode.INVALID_REQUEST,
                                  "Only topic configs can be altered; broker configs are static (server.properties).")
        topic = broker.image.topics.get(r["ResourceName"])
        if topic is None:
            raise TopicAdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{r['ResourceName']}' does not exist.")
        configs = dict(topic.configs)
        for c in r["Configs"]:
            _apply(configs, c["Name"], c["ConfigOperation"], c["Value"])
        alter_topic_configs(broker, topic.name, configs, validate_only)
    except TopicAdminError as e:
        out["ErrorCode"], out["ErrorMessage"] = e.error_code, str(e)
    return out


def _apply(configs: dict, name: str, op: int, value: str | None) -> None:
    spec = TOPIC_CONFIGS.get(name)
    if spec is None:
        raise TopicAdminError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    if op == SET:
        if value is None:
            raise TopicAdminError(ErrorCode.INVALID_CONFIG, f"{name}: SET needs a value")
        configs[name] = value
    elif op == DELETE:
        configs.pop(name, None)
    elif op in (APPEND, SUBTRACT):
        if spec.type != "list":
            raise TopicAdminError(ErrorCode.INVALID_CONFIG, f"{name} is not a list; APPEND/SUBTRACT do not apply")
        current = [v for v in configs.get(name, _text(spec.default) or "").split(",") if v]
        items = [v for v in (value or "").split(",") if v]
        current = current + [v for v in items if v not in current] if op == APPEND \
            else [v for v in current if v not in items]
        configs[name] = ",".join(current)
    else:
        raise TopicAdminError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")


def _text(value) -> str:
    return ",".join(value) if isinstance(value, (list, tuple)) else ("" if value is None else str(value))
