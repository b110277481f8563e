"""AlterUserScramCredentials (51), v0: forwarded to the active controller, as a KRaft
broker does (``controller.scram_control`` checks it and writes the records).

Once the controller answers, the broker waits (at most ``forward.IMAGE_WAIT_MAX_S``)
until its own image shows every accepted change, so the user can log in through this
broker at once. No controller in time: REQUEST_TIMED_OUT per user.
Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED per user, as Kafka).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from tierlog.metadata.scram import ScramMechanism
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode
from tierlog.protocol.header import RequestHeader

from . import authz
from .context import HandlerContext, Response
from .forward import TIMED_OUT_MESSAGE, forward_and_wait

if TYPE_CHECKING:
    from tierlog.protocol.typed.alter_user_scram_credentials import (
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
    )

API_KEY, MIN_VERSION, MAX_VERSION = ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0


def handle(broker: HandlerContext, header: RequestHeader,
           request: AlterUserScramCredentialsRequest) -> Response[AlterUserScramCredentialsResponse]:
    if not authz.cluster(broker, header, authz.Op.ALTER):
        return _every_user(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    deleted = {(d["Mechanism"], d["Name"]) for d in request.get("Deletions") or []}
    upserted = {(u["Mechanism"], u["Name"]): u["Iterations"] for u in request.get("Upsertions") or []}

    def shown(response):
        ok = {r["User"] for r in response["Results"] if r["ErrorCode"] == ErrorCode.NONE}

        def holds(image) -> bool:
            creds = image.scram.credentials
            return all(creds.get(k) is None for k in deleted if k[1] in ok) and \
                all(creds.get(k) is not None and creds[k].iterations == i for k, i in upserted.items()
                    if k[1] in ok and ScramMechanism.by_type(k[0]) is not None)
        return holds

    return forward_and_wait(broker, header, request, shown, 0, _timed_out)


def _timed_out(request: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
    return _every_user(request, ErrorCode.REQUEST_TIMED_OUT, TIMED_OUT_MESSAGE)


def _every_user(request: AlterUserScramCredentialsRequest, code: int, message: str | None) -> AlterUserScramCredentialsResponse:
    names = dict.fromkeys(x["Name"] for x in [*(request.get("Deletions") or []), *(request.get("Upsertions") or [])])
    return {"ThrottleTimeMs": 0, "Results": [{"User": n, "ErrorCode": code, "ErrorMessage": message} for n in names]}
