"""MapDataset: a torch map-style Dataset over any dspack dataset."""

import torch
import torch.utils.data

import dspack


def _to_torch(batch):
    """A packed batch with its arrays as tensors (no copy): a DataLoader worker then sends each
    field to the main process as two shared-memory tensors, not one pickled bytes per sample."""
    for name, v in batch.items():
        if isinstance(v, dspack.Packed):
            batch[name] = dspack.Packed(torch.from_numpy(v.data), torch.from_numpy(v.offsets))
        elif name != "__key__":
            batch[name] = torch.from_numpy(v)
    return batch


def packed_collate(batch):
    """The ``collate_fn`` for ``MapDataset(packed=True)``: the batch is already whole (a dict:
    ``"__key__"``, each field a ``dspack.Packed`` of tensors, the label an int64 tensor)."""
    return batch


class MapDataset(torch.utils.data.Dataset):
    """``dataset[i]`` is sample i as ``dspack.Dataset`` gives it, passed through ``transform``.

    With ``batch_reads=True`` a DataLoader batch is one ``read_batch`` (``__getitems__``), which
    pays where each read is a round trip (NFS); where reads are cheap, one read after another
    costs the worker less CPU (docs/python.md#measured). With ``packed=True`` (and
    ``collate_fn=packed_collate``) a batch is one dict of tensors: ``"__key__"``, each field a
    ``dspack.Packed`` (one uint8 tensor and its int64 offsets), the label an int64 tensor.

    Fork- and spawn-safe: it pickles by path, and each process (a DataLoader worker) opens the
    dataset itself on first use; what the parent opened (to answer ``len``, or a ``ds[0]`` read
    before the DataLoader forked) is never used or closed by a worker.
    """

    def __init__(self, path, transform=None, copy=True, inflight=32, batch_reads=False,
                 packed=False):
        if packed and transform is not None:
            raise ValueError("packed=True hands a batch out whole: transform the batch in the "
                             "training loop (or use packed=False with a per-sample transform)")
        self.path = str(path)
        self.transform = transform
        self.copy = copy
        self.inflight = inflight
        self.batch_reads = batch_reads
        self.packed = packed
        self._ds = dspack.open(self.path)

    def __len__(self):
        return len(self._ds)

    def __getitem__(self, i):
        sample = self._ds.get(i, self.copy)
        return self.transform(sample) if self.transform is not None else sample

    def __getitems__(self, indices):
        """A DataLoader batch (torch's fetcher calls this for a batched sampler): with
        ``batch_reads=True`` one ``read_batch``, ``inflight`` reads at once in the worker, else
        one ``self[i]`` after another; the same samples, in the same order, either way. With
        ``packed=True`` the batch is one dict instead (``packed_collate``)."""
        if self.packed:
            return _to_torch(self._ds.read_batch(indices, self.inflight, packed=True))
        if not self.batch_reads:
            return [self[i] for i in indices]
        samples = self._ds.read_batch(indices, self.inflight, self.copy)
        if self.transform is not None:
            samples = [self.transform(s) for s in samples]
        return samples

    @property
    def dataset(self):
        """The underlying ``dspack.Dataset`` (sizes, keys, read_batch)."""
        return self._ds

    @property
    def sizes(self):
        return self._ds.sizes

    def close(self):
        self._ds.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
