"""What DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets
(92) share: a topic's results (name, id, partitions), a partition's (index, error code, message)."""

from tierlog.protocol.schema import Field, Struct

__all__ = ["partition_result", "topic_results"]


def partition_result(name: str, fields: list[Field]) -> Struct:
    return Struct([Field("PartitionIndex", "int32"), *fields, Field("ErrorCode", "int16"),
                   Field("ErrorMessage", "string", nullable="0+", default=None)], name=name)


def topic_results(name: str, partition: Struct) -> Struct:
    return Struct([Field("TopicName", "string"), Field("TopicId", "uuid"), Field("Partitions", [partition])],
                  name=name)
