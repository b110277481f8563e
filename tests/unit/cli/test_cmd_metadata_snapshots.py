"""`tierlog metadata snapshots` on a directory without snapshots: says why and how to get one."""
from tierlog.cli.main import main


def test_no_snapshots_yet_says_when_they_come_and_how_to_get_one_sooner(tmp_path, capsys):
    (tmp_path / "__cluster_metadata-0").mkdir()
    assert main(["metadata", "snapshots", "--dir", str(tmp_path), "--print", "latest"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("tierlog: error: no snapshots in ")
    for hint in ("metadata.log.max.record.bytes.between.snapshots", "--set metadata.log.max.snapshot.interval.ms="):
        assert hint in err[0]
    assert main(["metadata", "snapshots", "--dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "--set metadata.log.max.snapshot.interval.ms=" in err
