"""The transaction coordinator (KIP-98, KIP-360, KIP-890; ``__transaction_state``), sans-IO.

A domain of its own beside the group coordinator (``tierlog.group``, ``__consumer_offsets``):
``state`` holds one transactional id's states and transitions (Kafka's
``TransactionMetadata``), ``log_records`` the key/value layouts of ``__transaction_state``,
``requests`` what InitProducerId, AddPartitionsToTxn and EndTxn decide before a write.
"""
from .log_records import (
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    log_value,
    metadata_from_log,
)
from .state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_2,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
)

__all__ = ["NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "TV_2", "TransactionLogValue", "TransactionMetadata", "TransactionState",
           "TxnTransit", "decode_key", "decode_value", "encode_key", "encode_value", "log_value",
           "metadata_from_log"]
