"""The start-up check of S3 remote storage: credentials, then the bucket.

A broker with tiered storage on S3 refuses to start, with one line saying what to
fix, when boto3 finds no credentials, when the bucket does not exist (unless
``rsm.config.storage.s3.create.bucket=true``, then it creates it), or when S3
refuses the credentials. Kafka checks none of this and fails on the first
upload, minutes later, in its log only. An endpoint that does not answer is
logged and not refused: S3 may be down for a while, uploads retry and reads
answer with errors meanwhile.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tierlog.tiered.object_store import RemoteStorageError

if TYPE_CHECKING:   # botocore ships no type stubs: these names are Any to mypy, named for the reader
    from botocore.client import BaseClient
    from botocore.exceptions import ClientError

__all__ = ["CREATE_BUCKET_KEY", "check_bucket"]

_log = logging.getLogger(__name__)

CREATE_BUCKET_KEY = "rsm.config.storage.s3.create.bucket"
_MISSING = frozenset({"404", "NoSuchBucket", "NotFound"})
_DENIED = frozenset({"403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"})
_OURS_ALREADY = "BucketAlreadyOwnedByYou"      # another broker created it first
_NO_CREDENTIALS = ("no AWS credentials found (boto3 looks in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, "
                   "AWS_PROFILE and ~/.aws/credentials, then the instance role)")


def check_bucket(s3: BaseClient, bucket: str, create: bool) -> None:
    """Raise RemoteStorageError unless ``bucket`` can be used through the boto3 client ``s3``."""
    from botocore.exceptions import ClientError, HTTPClientError, NoCredentialsError
    from botocore.exceptions import ConnectionError as Unreachable

    try:
        s3.head_bucket(Bucket=bucket)
    except NoCredentialsError:
        raise RemoteStorageError(_NO_CREDENTIALS) from None
    except ClientError as exc:
        _refuse_or_create(s3, bucket, create, _code(exc))
    except (Unreachable, HTTPClientError) as exc:
        _log.warning("S3 remote storage s3://%s not reachable at start-up (%s); uploads will retry", bucket, exc)


def _refuse_or_create(s3: BaseClient, bucket: str, create: bool, code: str) -> None:
    if code in _DENIED:
        raise RemoteStorageError(f"S3 refused access to bucket {bucket} ({code}): check the credentials "
                                 "and the bucket's policy") from None
    if code not in _MISSING:
        raise RemoteStorageError(f"S3 bucket {bucket} cannot be used ({code})") from None
    if not create:
        raise RemoteStorageError(f"S3 bucket {bucket} does not exist: create it, or set "
                                 f"{CREATE_BUCKET_KEY}=true") from None
    _create(s3, bucket)


def _create(s3: BaseClient, bucket: str) -> None:
    from botocore.exceptions import ClientError

    region = s3.meta.region_name
    where = {} if region in (None, "us-east-1") else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    try:
        s3.create_bucket(Bucket=bucket, **where)
    except ClientError as exc:
        if _code(exc) != _OURS_ALREADY:
            raise RemoteStorageError(f"cannot create S3 bucket {bucket} ({_code(exc)}): {exc}") from None
    _log.info("created S3 bucket %s (%s=true)", bucket, CREATE_BUCKET_KEY)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "unknown"))
