"""ImageDigestCollector: which metadata image a node holds, as one metric, to compare nodes.

``tierlog_metadata_image_info{offset="N",digest="D"} 1``: ``offset`` is the end offset of the
metadata log the node's image contains (its provenance), ``digest`` the first 16 hex digits of
a SHA-256 over the image's snapshot records (metadata/snapshot.py), each encoded, sorted, so
two nodes that replayed the same records in any way (log, snapshot, catch-up) agree.  Two
nodes at one offset with different digests hold different images: the nemesis soak
(bench/soak.py) checks every node after healing.  Computed at the first scrape of each new
image (images are immutable: kept by identity), nothing between scrapes.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from tierlog.metadata.image import MetadataImage
from tierlog.metadata.snapshot import snapshot_record_bytes

__all__ = ["IMAGE_INFO", "ImageDigestCollector", "image_digest"]

IMAGE_INFO = "tierlog_metadata_image_info"


def image_digest(image: MetadataImage) -> str:
    h = hashlib.sha256()
    for record in sorted(snapshot_record_bytes(image)):
        h.update(len(record).to_bytes(4, "big"))
        h.update(record)
    return h.hexdigest()[:16]


class ImageDigestCollector:
    def __init__(self, image: Callable[[], MetadataImage]):
        self._image = image
        self._last: tuple[MetadataImage, str] | None = None

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(IMAGE_INFO, "", labels=["offset", "digest"])]

    def collect(self) -> Iterator[Metric]:
        image = self._image()
        if self._last is None or self._last[0] is not image:
            self._last = (image, image_digest(image))
        family = GaugeMetricFamily(IMAGE_INFO, "The metadata image this node holds: the metadata log end offset "
                                   "it contains and a digest of its records", labels=["offset", "digest"])
        family.add_metric([str(image.provenance.end_offset), self._last[1]], 1)
        yield family
