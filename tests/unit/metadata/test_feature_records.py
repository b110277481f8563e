"""Finalized features (KIP-584 in KRaft): FeatureLevelRecord sets a level and level 0 removes it,
snapshots carry the levels, a node's bootstrap adds the defaults it was not given, and
ApiVersions' feature fields."""
from tierlog.metadata.delta import MetadataDelta
from tierlog.metadata.feature_records import (
    SHARE_VERSION,
    TRANSACTION_VERSION,
    FeatureLevelRecord,
    api_versions_features,
    with_default_features,
)
from tierlog.metadata.image import MetadataImage, MetadataProvenance
from tierlog.metadata.snapshot import load_snapshot, snapshot_records


def _apply(image: MetadataImage, *records) -> MetadataImage:
    delta = MetadataDelta(image, 0)
    for r in records:
        delta.replay(r)
    return delta.apply(MetadataProvenance(7, 1, 0))


def test_levels_are_set_removed_and_kept_by_snapshots():
    image = _apply(MetadataImage.empty("c"), FeatureLevelRecord(TRANSACTION_VERSION, 2))
    assert dict(image.features) == {TRANSACTION_VERSION: 2}
    assert dict(load_snapshot(snapshot_records(image)).features) == {TRANSACTION_VERSION: 2}
    assert dict(_apply(image, FeatureLevelRecord(TRANSACTION_VERSION, 0)).features) == {}


def test_defaults_are_added_to_the_bootstrap_unless_it_sets_them():
    assert with_default_features([]) == [FeatureLevelRecord(TRANSACTION_VERSION, 2),
                                         FeatureLevelRecord(SHARE_VERSION, 1)]
    assert with_default_features([FeatureLevelRecord(TRANSACTION_VERSION, 1)]) == \
        [FeatureLevelRecord(TRANSACTION_VERSION, 1), FeatureLevelRecord(SHARE_VERSION, 1)]


def test_api_versions_answers_supported_and_finalized_levels():
    supported = [{"Name": "kraft.version", "MinVersion": 0, "MaxVersion": 1},
                 {"Name": SHARE_VERSION, "MinVersion": 0, "MaxVersion": 1},
                 {"Name": TRANSACTION_VERSION, "MinVersion": 0, "MaxVersion": 2}]
    assert api_versions_features({TRANSACTION_VERSION: 2}, 41) == {
        "SupportedFeatures": supported,
        "FinalizedFeaturesEpoch": 41,
        "FinalizedFeatures": [{"Name": TRANSACTION_VERSION, "MaxVersionLevel": 2, "MinVersionLevel": 2}]}


def test_a_dynamic_quorum_finalizes_kraft_version_1():
    """KIP-853: kraft.version comes from the Raft replica, not from a FeatureLevelRecord."""
    finalized = api_versions_features({TRANSACTION_VERSION: 2}, 41, kraft_version=1)["FinalizedFeatures"]
    assert finalized == [{"Name": "kraft.version", "MaxVersionLevel": 1, "MinVersionLevel": 1},
                         {"Name": TRANSACTION_VERSION, "MaxVersionLevel": 2, "MinVersionLevel": 2}]
