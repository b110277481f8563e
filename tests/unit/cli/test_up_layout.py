"""tierlog up's data-dir layout rule."""
from tierlog.cli.up_layout import check_data_dir, layout_mismatch

C, B, CB = ("controller",), ("broker",), ("broker", "controller")
THREE_PLUS_THREE = {1: C, 2: C, 3: C, 4: B, 5: B, 6: B}


def test_the_same_layout_and_added_brokers_are_accepted():
    assert layout_mismatch({}, {1: CB}) is None
    assert layout_mismatch(THREE_PLUS_THREE, THREE_PLUS_THREE) is None
    assert layout_mismatch(THREE_PLUS_THREE, {**THREE_PLUS_THREE, 7: B}) is None


def test_other_roles_missing_nodes_and_new_voters_are_refused():
    assert "node 1 was controller, now planned as broker+controller" in layout_mismatch(THREE_PLUS_THREE, {1: CB})
    assert "node 6 (broker) is not in the planned cluster" in layout_mismatch(THREE_PLUS_THREE,
                                                                             {k: v for k, v in THREE_PLUS_THREE.items()
                                                                              if k != 6})
    assert "controller node 2 would join" in layout_mismatch({1: CB}, {1: CB, 2: CB})


def test_check_data_dir_reads_the_nodes_written_before(tmp_path):
    for node_id, roles in THREE_PLUS_THREE.items():
        (tmp_path / f"node-{node_id}").mkdir()
        (tmp_path / f"node-{node_id}" / "server.properties").write_text(
            f"node.id={node_id}\nprocess.roles={','.join(roles)}\n")
    refusal = check_data_dir(tmp_path, {1: CB})
    assert refusal.startswith(f"{tmp_path} holds a cluster of 3 controllers + 3 brokers")
    assert check_data_dir(tmp_path, THREE_PLUS_THREE) is None
