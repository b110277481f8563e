"""ListGroups (16), v0-5: the groups this broker coordinates.

v4 StatesFilter, v5 TypesFilter (case-insensitive; "classic" or "consumer",
KIP-848's groups, whose states are Empty, Assigning, Reconciling, Stable).  While a coordinator partition is loading the answer carries
COORDINATOR_LOAD_IN_PROGRESS with the groups known so far.
"""
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from .context import HandlerContext

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_GROUPS, 0, 5


def handle(broker: HandlerContext, header: RequestHeader, request: dict) -> dict:
    shards, loading = broker.groups.loaded_shards()
    groups = [g for shard in shards
              for g in shard.list_groups(request.get("StatesFilter") or [], request.get("TypesFilter") or [])]
    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "Groups": groups}
