"""MapDataset: a torch map-style Dataset over any dspack dataset."""

import torch.utils.data

import dspack


class MapDataset(torch.utils.data.Dataset):
    """``dataset[i]`` is sample i as ``dspack.Dataset`` gives it, passed through ``transform``.

    Fork- and spawn-safe: it pickles by path, and each process (a DataLoader worker) opens the
    dataset itself on first use; what the parent opened (to answer ``len``, or a ``ds[0]`` read
    before the DataLoader forked) is never used or closed by a worker.
    """

    def __init__(self, path, transform=None, copy=True):
        self.path = str(path)
        self.transform = transform
        self.copy = copy
        self._ds = dspack.open(self.path)

    def __len__(self):
        return len(self._ds)

    def __getitem__(self, i):
        sample = self._ds.get(i, self.copy)
        return self.transform(sample) if self.transform is not None else sample

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
