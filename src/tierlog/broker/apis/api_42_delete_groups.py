"""DeleteGroups (42), v0-2: delete groups without members, with their offsets.

Per group: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, or the tombstones of its
offsets and metadata are written (answered once committed).  An empty share group's
share-partition state is deleted first through the share coordinator (DeleteShareGroupState, as
Kafka does); an error there is the group's answer and the group stays.
ACLs: DELETE on the group, else GROUP_AUTHORIZATION_FAILED for it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext
from .share_offsets import delete_states, state_topics

if TYPE_CHECKING:
    from tierlog.protocol.typed.delete_groups import (
        DeleteGroupsRequest,
        DeleteGroupsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.DELETE_GROUPS, 0, 2


async def handle(broker: HandlerContext, header: RequestHeader, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    answers = await asyncio.gather(*(_delete(broker, g) if authz.group(broker, header, authz.Op.DELETE, g)
                                     else _refused(g) for g in request["GroupsNames"]))
    return {"ThrottleTimeMs": 0, "Results": [r for a in answers for r in a["Results"]]}


async def _refused(group_id: str) -> dict:
    return {"Results": [{"GroupId": group_id, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED}]}


async def _delete(broker, group_id: str):
    error, busy, known = state_topics(broker, group_id)
    if not error and busy is False:         # an empty share group: its share state goes first
        for topic_id, (_name, partitions) in sorted(known.items()):
            failed = next((e for e in (await delete_states(broker, group_id, topic_id, partitions)).values() if e), 0)
            if failed:
                return {"Results": [{"GroupId": group_id, "ErrorCode": failed}]}
    return await broker.groups.run(group_id, lambda shard, token, now: shard.delete_groups([group_id], token, now),
                                   lambda code: {"Results": [{"GroupId": group_id, "ErrorCode": code}]})
