"""dspack for PyTorch: datasets, a size-balanced sampler and a threaded loader (docs/python.md).

    MapDataset(path, transform=None)       map-style; fork- and spawn-safe; batch_reads=True:
                                           a DataLoader batch is one read_batch
    MapDataset(path, packed=True) + collate_fn=packed_collate
                                           a batch as one tensor per field
    StreamDataset(path, shuffle, seed, buffer, ...)
                                           iterable; shards split across ranks and workers
    BalancedDistributedSampler(dataset)    equal counts and bytes per rank
    ThreadLoader(dataset, batch_size, threads, prefetch)
                                           in-process batches read with the GIL released
    decode_image(field="jpg")              a transform: the field's bytes to a CHW uint8 tensor
    epoch_marker(loader, epoch)            marks an epoch for `dsbench watch` (docs/watch.md);
                                           ThreadLoader marks its own

No MPI here: the package never links libmpi (forking DataLoader workers under Open MPI is a known
hazard); ranks come from torch.distributed or RANK/WORLD_SIZE.
"""

from ._dist import BalancedDistributedSampler, balanced_assignment, rank_and_world
from ._loader import ThreadLoader
from ._map import MapDataset, packed_collate
from ._stream import StreamDataset
from ._transforms import decode_image
from ._watch import epoch_marker

__all__ = ["MapDataset", "packed_collate", "StreamDataset", "BalancedDistributedSampler",
           "ThreadLoader", "decode_image", "epoch_marker", "balanced_assignment", "rank_and_world"]
