"""DeleteTopics (20), v1-6: by name (v1-5) or by name or id (v6); the logs go with them."""
from tierlog.protocol.errors import ErrorCode

from ..topic_admin import TopicAdminError, delete_topic

API_KEY, MIN_VERSION, MAX_VERSION = 20, 1, 6
NO_ID = bytes(16)


def handle(broker, header, request):
    if header.api_version >= 6:
        wanted = [(t.get("Name"), t.get("TopicId", NO_ID)) for t in request["Topics"]]
    else:
        wanted = [(name, NO_ID) for name in request["TopicNames"]]
    return {"ThrottleTimeMs": 0, "Responses": [_one(broker, name, tid) for name, tid in wanted]}


def _one(broker, name, topic_id) -> dict:
    out = {"Name": name, "TopicId": topic_id, "ErrorCode": 0, "ErrorMessage": None}
    if name is None:
        info = broker.image.topic_by_id(topic_id)
        if info is None:
            out["ErrorCode"], out["ErrorMessage"] = ErrorCode.UNKNOWN_TOPIC_ID, "Unknown topic id."
            return out
        name = out["Name"] = info.name
    try:
        topic = delete_topic(broker, name)
        out["TopicId"] = topic.topic_id
    except TopicAdminError as e:
        out["ErrorCode"], out["ErrorMessage"] = e.error_code, str(e)
    return out
