"""Moving a replica to another log dir of its broker (AlterReplicaLogDirs): the future log is filled
from the current one a step at a time while appends go on, swaps once caught up, and a restart, a
failed target dir or a cancel leave the current log whole."""
import asyncio
import shutil
from pathlib import Path
from types import SimpleNamespace

from leaders import lead

from tierlog.broker import log_dir_moves
from tierlog.broker.apis import api_34_alter_replica_log_dirs as alter_api
from tierlog.broker.apis import api_35_describe_log_dirs as describe_api
from tierlog.broker.log_dir_moves import LogDirMoves
from tierlog.broker.partition import AppendOrigin, FetchIsolation, Partition
from tierlog.broker.replica_manager import ReplicaManager
from tierlog.metadata import TopicInfo
from tierlog.metadata.image import PartitionInfo
from tierlog.protocol.errors import ErrorCode as E
from tierlog.records import Record, build_batch, decode_batches
from tierlog.storage import LogConfig, LogManager

NOW = 1_700_000_000_000
CONFIG = LogConfig.from_props({"file.delete.delay.ms": "0"})


class _Tasks:
    def __init__(self):
        self.spawned = 0

    def spawn(self, coro, name=""):
        self.spawned += 1
        coro.close()        # the tests drive LogDirMoves.step themselves


def _setup(tmp_path: Path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    logs = LogManager(dirs, NOW, config_for=lambda _t: CONFIG)
    part = Partition("t", 0, b"\x01" * 16, logs.create("t", 0, b"\x01" * 16, CONFIG, NOW), leader_id=1,
                     leader_epoch=3)
    lead(part, replicas=(1,))
    moved = []
    moves = LogDirMoves(logs, lambda t, p: part if (t, p) == ("t", 0) else None, moved.append, lambda: NOW,
                        _Tasks())
    return logs, part, moves, moved


def _append(part, n=20, **producer):
    out = part.append_as_leader(bytearray(build_batch([Record(i, NOW, None, b"x" * 100) for i in range(n)],
                                                      **producer)), AppendOrigin.CLIENT, 1, NOW)
    assert out.error == E.NONE
    return out


def _values(part) -> list[tuple[int, int]]:
    read = part.read(0, 1 << 24, FetchIsolation.LOG_END)
    return [(h.base_offset, h.partition_leader_epoch) for h, _ in decode_batches(b"".join(p.read() for p in read.parts))]


def _other(logs, part) -> Path:
    return next(d for d in logs.log_dirs if d != logs.log_dir_of("t", 0))


def test_the_future_log_catches_up_in_steps_while_appends_go_on_then_swaps(tmp_path):
    logs, part, moves, moved = _setup(tmp_path)
    for _ in range(30):
        _append(part)
    before, source, target = _values(part), logs.log_dir_of("t", 0), _other(logs, part)
    assert moves.alter("t", 0, str(target)) == E.NONE
    future = logs.future_of("t", 0)
    assert future is part.future and future.directory.name.endswith("-future")
    assert future.directory.parent == target
    log_dir_moves.COPY_BYTES_PER_STEP = 4096        # several steps for 30 batches of ~2 KiB
    try:
        steps = 0
        while moves.moving:
            moves.step(("t", 0))
            steps += 1
            if steps % 3 == 0 and moves.moving:
                _append(part)                   # the producer keeps writing meanwhile
    finally:
        log_dir_moves.COPY_BYTES_PER_STEP = 1024 * 1024
    assert steps > 3 and moved == [("t", 0)]
    assert part.future is None and logs.future_of("t", 0) is None
    assert logs.log_dir_of("t", 0) == target and part.log.directory == target / "t-0"
    assert _values(part)[:len(before)] == before and part.log_end_offset == 20 * (30 + steps // 3)
    assert part.latest_epoch == 3
    assert not (source / "t-0").exists()
    _append(part)                               # the new current log takes appends
    logs.tick(NOW + 1)                          # file.delete.delay.ms 0: the old dir goes
    assert [p.name for p in source.iterdir() if p.is_dir()] == []
    end = part.log_end_offset
    logs.close()
    again = LogManager(logs.log_dirs, NOW, config_for=lambda _t: CONFIG)
    assert again.log_dir_of("t", 0) == target and again.get("t", 0).log_end_offset == end
    again.close()


def test_kafka_errors_for_unknown_and_offline_dirs_and_replicas_not_hosted(tmp_path):
    logs, part, moves, _ = _setup(tmp_path)
    target = _other(logs, part)
    assert moves.alter("t", 0, str(tmp_path / "nowhere")) == E.LOG_DIR_NOT_FOUND
    assert moves.alter("t", 0, "d2\0") == E.LOG_DIR_NOT_FOUND and moves.alter("t", 0, "") == E.LOG_DIR_NOT_FOUND
    assert moves.alter("t", 0, str(target) + "/") == E.NONE        # the same dir, spelt with a slash
    assert moves.alter("t", 0, str(logs.log_dir_of("t", 0))) == E.NONE      # cancelled again
    assert moves.alter("t", 1, str(target)) == E.REPLICA_NOT_AVAILABLE
    assert moves.alter("u", 0, str(target)) == E.REPLICA_NOT_AVAILABLE
    logs.failures.report(target, "disk gone")
    logs.take_failed_offline()
    assert moves.alter("t", 0, str(target)) == E.KAFKA_STORAGE_ERROR
    assert logs.futures() == {}


def test_asking_for_the_current_dir_cancels_the_move(tmp_path):
    logs, part, moves, moved = _setup(tmp_path)
    _append(part)
    source, target = logs.log_dir_of("t", 0), _other(logs, part)
    assert moves.alter("t", 0, str(target)) == E.NONE
    future_dir = logs.future_of("t", 0).directory
    assert moves.alter("t", 0, str(source)) == E.NONE
    assert part.future is None and not moves.moving and not future_dir.exists() and moved == []
    assert logs.log_dir_of("t", 0) == source and part.log_end_offset == 20


def test_a_failed_target_dir_aborts_the_move_and_the_replica_keeps_serving(tmp_path):
    logs, part, moves, moved = _setup(tmp_path)
    _append(part)
    source, target = logs.log_dir_of("t", 0), _other(logs, part)
    assert moves.alter("t", 0, str(target)) == E.NONE
    logs.failures.report(target, "EIO")
    logs.take_failed_offline()
    moves.step(("t", 0))
    assert not moves.moving and part.future is None and moved == []
    assert logs.log_dir_of("t", 0) == source and not part.offline
    _append(part)
    assert part.log_end_offset == 40


def test_a_restart_in_the_middle_resumes_the_move(tmp_path):
    logs, part, moves, moved = _setup(tmp_path)
    for _ in range(3):
        _append(part)
    source, target = logs.log_dir_of("t", 0), _other(logs, part)
    assert moves.alter("t", 0, str(target)) == E.NONE
    assert not part.copy_to_future(2500, NOW)       # one batch of three copied
    future_dir = logs.future_of("t", 0).directory
    logs.close()
    again = LogManager(logs.log_dirs, NOW, config_for=lambda _t: CONFIG)
    future = again.future_of("t", 0)
    assert future.directory == future_dir and future.log_end_offset == 20 and again.future_dir_of("t", 0) == target
    current = again.get("t", 0)
    assert again.log_dir_of("t", 0) == source and current.log_end_offset == 60
    part = Partition("t", 0, b"\x01" * 16, current, leader_id=1, leader_epoch=3)
    lead(part, replicas=(1,))
    moves = LogDirMoves(again, lambda t, p: part, moved.append, lambda: NOW, _Tasks())
    moves.resume(part)
    assert part.future is future and moves.moving
    moves.step(("t", 0))
    assert again.log_dir_of("t", 0) == target and part.log_end_offset == 60 and moved == [("t", 0)]
    again.close()


def test_a_future_log_without_its_current_log_is_removed_at_start(tmp_path):
    logs, part, moves, _ = _setup(tmp_path)
    _append(part)
    assert moves.alter("t", 0, str(_other(logs, part))) == E.NONE
    future_dir, current_dir = logs.future_of("t", 0).directory, part.log.directory
    logs.close()
    shutil.rmtree(current_dir)
    again = LogManager(logs.log_dirs, NOW, config_for=lambda _t: CONFIG)
    assert again.futures() == {} and not future_dir.exists() and again.get("t", 0) is None
    again.close()


def test_a_follower_truncation_applies_to_the_future_log_too(tmp_path):
    logs, part, moves, _ = _setup(tmp_path)
    for _ in range(3):
        _append(part)
    assert moves.alter("t", 0, str(_other(logs, part))) == E.NONE
    assert part.copy_to_future(1 << 20, NOW)
    part.become_follower(2, 4)
    part.truncate_to(20)
    assert part.future.log_end_offset == 20 and part.copy_to_future(1 << 20, NOW)


def test_idempotent_producer_state_moves_with_the_log(tmp_path):
    logs, part, moves, _ = _setup(tmp_path)
    first = _append(part, producer_id=7, producer_epoch=0, base_sequence=0)
    assert moves.alter("t", 0, str(_other(logs, part))) == E.NONE
    moves.step(("t", 0))
    assert not moves.moving
    retry = _append(part, producer_id=7, producer_epoch=0, base_sequence=0)
    assert (retry.base_offset, part.log_end_offset) == (first.base_offset, 20)      # a duplicate, not appended


def test_the_replica_manager_moves_a_replica_and_tells_the_controller_its_new_dir(tmp_path):
    """Through ReplicaManager: the copier task runs on the event loop until the swap, then the move
    is queued for AssignReplicasToDirs (KIP-858) with the target dir's id."""
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    dir_ids = {dirs[0]: b"\x0a" * 16, dirs[1]: b"\x0b" * 16}
    topic_id = b"\x01" * 16
    topic = TopicInfo("t", topic_id, (PartitionInfo(0, 1, 3, (1,), (1,), partition_epoch=1,
                                                    directories=(dir_ids[dirs[0]],)),))

    async def run():
        logs = LogManager(dirs, NOW, config_for=lambda _t: CONFIG)
        rm = ReplicaManager(1, logs, {}, lambda: NOW, controller_channel=None, broker_epoch=lambda: 1,
                            image_fn=lambda: None, dir_ids=dir_ids)
        rm.dir_assignments.kick = lambda: None          # the request is read below instead of sent
        rm._image_follower._image = SimpleNamespace(topics={"t": topic})      # the image applied last
        part = rm._ensure(topic, topic.partitions[0], rm.log_config(topic))
        lead(part, replicas=(1,))
        for _ in range(10):
            _append(part)
        assert logs.log_dir_of("t", 0) == dirs[0]
        assert rm.log_dir_moves.alter("t", 0, str(dirs[1])) == E.NONE
        for _ in range(1000):
            if not rm.log_dir_moves.moving:
                break
            await asyncio.sleep(0)
        assert not rm.log_dir_moves.moving and logs.log_dir_of("t", 0) == dirs[1] and part.log_end_offset == 200
        image = SimpleNamespace(topic_by_id=lambda tid: topic if tid == topic_id else None)
        request = rm.dir_assignments.core.next_request(image, 1, NOW)
        assert [d["Id"] for d in request["Directories"]] == [dir_ids[dirs[1]]]
        await rm.stop()
        logs.close()
    asyncio.run(run())


def test_the_log_start_moves_with_the_log(tmp_path):
    logs, part, moves, _ = _setup(tmp_path)
    for _ in range(3):
        _append(part)
    assert part.delete_records_on_leader(25)[0] == E.NONE      # DeleteRecords before the move
    assert moves.alter("t", 0, str(_other(logs, part))) == E.NONE
    future = part.future
    assert part.copy_to_future(1 << 20, NOW) and future.log_start_offset == 25
    assert part.delete_records_on_leader(50)[0] == E.NONE      # and during it
    moves.step(("t", 0))
    assert part.log is future and (part.log_start_offset, part.log_end_offset) == (50, 60)
    assert part.read(50, 1 << 20, FetchIsolation.LOG_END).error == E.NONE
    assert part.read(20, 1 << 20, FetchIsolation.LOG_END).error == E.OFFSET_OUT_OF_RANGE


class _Deny:
    def authorize(self, *_args):
        return False


def test_the_apis_answer_per_partition_and_describe_shows_the_future_log(tmp_path):
    logs, part, moves, _ = _setup(tmp_path)
    for _ in range(3):
        _append(part)
    source, target = logs.log_dir_of("t", 0), _other(logs, part)
    broker = SimpleNamespace(authorizer=None, replicas=SimpleNamespace(logs=logs, log_dir_moves=moves,
                                                                       get=lambda t, p: part if (t, p) == ("t", 0)
                                                                       else None))
    header = SimpleNamespace(principal="User:a", client_host="h")
    request = {"Dirs": [{"Path": str(target), "Topics": [{"Name": "t", "Partitions": [0, 7]}]},
                        {"Path": "/elsewhere", "Topics": [{"Name": "u", "Partitions": [0]}]}]}
    answer = alter_api.handle(broker, header, request)
    assert answer["Results"] == [
        {"TopicName": "t", "Partitions": [{"PartitionIndex": 0, "ErrorCode": E.NONE},
                                          {"PartitionIndex": 7, "ErrorCode": E.REPLICA_NOT_AVAILABLE}]},
        {"TopicName": "u", "Partitions": [{"PartitionIndex": 0, "ErrorCode": E.LOG_DIR_NOT_FOUND}]}]
    assert part.copy_to_future(2500, NOW) is False          # one batch of three copied
    described = describe_api.handle(broker, header, {"Topics": None})
    entries = {(r["LogDir"], p["IsFutureKey"]): p for r in described["Results"] for t in r["Topics"]
               for p in t["Partitions"]}
    assert set(entries) == {(str(source.absolute()), False), (str(target.absolute()), True)}
    future = entries[(str(target.absolute()), True)]
    assert future["OffsetLag"] == 40 and 0 < future["PartitionSize"] < entries[(str(source.absolute()), False)][
        "PartitionSize"]
    broker.authorizer, broker.image = _Deny(), SimpleNamespace(acls=None)
    refused = alter_api.handle(broker, header, request)
    assert {p["ErrorCode"] for t in refused["Results"] for p in t["Partitions"]} == {E.CLUSTER_AUTHORIZATION_FAILED}


def test_a_follower_moves_too_and_its_fetcher_view_follows_the_swap(tmp_path):
    logs, part, moves, moved = _setup(tmp_path)
    _append(part)
    part.become_follower(2, 4)
    view = part.follower_view()                 # what the replica fetcher keeps
    leader_batch = bytearray(build_batch([Record(20 + i, NOW, None, b"y") for i in range(5)], base_offset=20))
    assert moves.alter("t", 0, str(_other(logs, part))) == E.NONE
    part.append_as_follower(leader_batch, NOW)  # the leader's records arrive during the move
    moves.step(("t", 0))
    assert moved == [("t", 0)] and view.log_end_offset == part.log_end_offset == 25
    part.append_as_follower(bytearray(build_batch([Record(25, NOW, None, b"z")], base_offset=25)), NOW)
    assert view.log_end_offset == 26 and view.latest_epoch == part.latest_epoch
