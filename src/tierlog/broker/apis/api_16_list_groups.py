"""ListGroups (16), v0-5: the groups this broker coordinates.

v4 StatesFilter, v5 TypesFilter (case-insensitive; "classic" or "consumer",
KIP-848's groups, whose states are Empty, Assigning, Reconciling, Stable).  While a coordinator partition is loading the answer
carries COORDINATOR_LOAD_IN_PROGRESS with the groups known so far.
ACLs: every group with DESCRIBE on the cluster, else only the groups the principal may DESCRIBE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext

if TYPE_CHECKING:
    from tierlog.protocol.typed.list_groups import ListGroupsRequest, ListGroupsResponse

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.LIST_GROUPS, 0, 5


def handle(broker: HandlerContext, header: RequestHeader, request: ListGroupsRequest) -> ListGroupsResponse:
    shards, loading = broker.groups.loaded_shards()
    groups = [g for shard in shards
              for g in shard.list_groups(request.get("StatesFilter") or [], request.get("TypesFilter") or [])]
    if not authz.cluster(broker, header, authz.Op.DESCRIBE):
        groups = [g for g in groups if authz.group(broker, header, authz.Op.DESCRIBE, g["GroupId"])]
    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NONE
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "Groups": groups}
