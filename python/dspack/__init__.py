"""dspack: read every dataset layout dspack writes, a zip file or a directory tree, from Python.

    import dspack
    with dspack.open("/data/imagenet-native") as ds:
        len(ds)                  # samples
        ds[0]                    # {"__key__": "n01440764/n01440764_10026", "JPEG": b"...", "cls": 0}
        ds.read_batch([5, 9, 2]) # many reads in flight, the GIL released for the whole batch

The formats are read by the C++ libraries (dspack._dspack over formats/layout.h), never in
Python. Full guide: docs/python.md.

Samples. ``ds[i]`` is a dict: ``"__key__"`` (str), then one entry per field, named as
``dspack convert`` named it (the file's extension: ``"jpg"``, ``"json"``, ...), holding ``bytes``;
the label field (``ds.label_field``, ``"cls"`` after ``--label-from-dir``) holds an ``int``, the
class number (``ds.classes[n]`` is its name). Keys and field names that are not UTF-8 are decoded
as ``os.fsdecode`` does (surrogateescape).

Zero copy. ``ds.get(i, copy=False)`` and ``ds.read_batch(..., copy=False)`` hand each field out
as a read-only ``numpy.uint8`` array instead of ``bytes``. The array owns the buffer the bytes
were read into: it stays valid for as long as the array (or a view of it) is referenced, and no
copy is made after the read.

Errors. ``FileNotFoundError`` (a missing path, or a file of the dataset gone), ``IndexError``,
``KeyError`` (``index_of``), ``DatasetError`` (an ``OSError``: a dataset that cannot be opened,
damaged or unfinished, with the message ``dspack verify`` gives) and ``CorruptSampleError`` (a
``DatasetError``: a sample failed a check; the message names the file, offset and key).

Processes. A Dataset may be pickled (by path) and used after ``fork()``: each process opens the
dataset itself, lazily, on first use; nothing opened in a parent is used or closed by a child.
"""

import json as _json
import operator as _operator
import os as _os

from ._dspack import CorruptSampleError, DatasetError, assign_shards
from ._dspack import Reader as _Reader

__all__ = ["open", "Dataset", "Packed", "CorruptSampleError", "DatasetError", "assign_shards"]


class Packed:
    """One field of a packed batch (``read_batch(..., packed=True)``).

    ``data`` is a ``numpy.uint8`` array holding every sample's bytes back to back, and
    ``offsets`` an int64 array of ``len + 1``: sample j's bytes are
    ``data[offsets[j]:offsets[j + 1]]`` (``packed[j]``, a view; empty where sample j has no such
    field). ``data`` owns its buffer, which is the caller's alone (writeable): it, and every view
    of it, stays valid while referenced; ``torch.from_numpy(packed.data)`` makes one tensor of the
    whole batch without a copy. ``dspack.torch.MapDataset(packed=True)`` hands out ``Packed``
    fields holding torch tensors instead; the methods work on either.
    """

    __slots__ = ("data", "offsets")

    def __init__(self, data, offsets):
        self.data, self.offsets = data, offsets

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, j):
        n = len(self)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError(f"packed field index {j} out of range ({n} samples)")
        return self.data[self.offsets[j]:self.offsets[j + 1]]

    def __iter__(self):
        return (self[j] for j in range(len(self)))

    @property
    def lengths(self):
        """Bytes per sample (int64 array)."""
        return self.offsets[1:] - self.offsets[:-1]

    def __repr__(self):
        return f"Packed({len(self)} samples, {int(self.offsets[-1])} bytes)"


class Dataset:
    """A dataset opened by ``dspack.open``: random access, batches, keys and sizes."""

    def __init__(self, path):
        self._path = _os.fspath(path)
        self._reader = None
        self._pid = None
        self._closed = False
        self._sizes = None
        self._len = len(self._open())  # fail now, in the caller, on a bad path

    # --- process-local reader -----------------------------------------------------------------
    def _open(self):
        if self._closed:
            raise ValueError(f"{self._path}: I/O operation on a closed dspack dataset")
        pid = _os.getpid()
        if self._reader is None or self._pid != pid:
            # After fork the parent's reader is dropped without closing it (the extension leaks
            # a reader it did not open: see python/src/module.cc).
            self._reader = _Reader(self._path)
            self._pid = pid
        return self._reader

    def __getstate__(self):
        return {"path": self._path, "closed": self._closed}

    def __setstate__(self, state):
        self._path = state["path"]
        self._closed = state["closed"]
        self._reader = None
        self._pid = None
        self._sizes = None
        self._len = None

    # --- the dataset ----------------------------------------------------------------------------
    @property
    def path(self):
        return self._path

    @property
    def kind(self):
        """The layout: native, lmdb, wds, tfrecord, recordio, zip or tree."""
        return self._open().kind

    @property
    def label_field(self):
        """The label field's name ("" when the dataset has no labels)."""
        return self._open().label_field

    @property
    def classes(self):
        """Class names: ``classes[label]`` (empty when the dataset has no labels)."""
        return self._open().classes

    def __len__(self):
        if self._len is None:
            self._len = len(self._open())
        return self._len

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.read_batch(range(*i.indices(len(self))))
        return self._open().get(_index(i))

    def get(self, i, copy=True):
        return self._open().get(_index(i), copy)

    def __iter__(self):
        n = len(self)
        for start in range(0, n, 256):
            yield from self.read_batch(range(start, min(n, start + 256)))

    def read_batch(self, indices, inflight=32, copy=True, collate=False, packed=False):
        """Samples ``indices`` (any order, repeats allowed), ``inflight`` reads at once.

        Returns a list of sample dicts, or with ``collate=True`` one dict of lists (``"__key__"``
        and each field), the shape ``torch.utils.data.default_collate`` gives, without tensors.
        With ``packed=True``, one dict: ``"__key__"`` (a list of str), each field a ``Packed``
        (every sample's bytes in one buffer), and the label field an int64 numpy array; the
        fewest Python objects per batch (``copy`` and ``collate`` do not apply).
        """
        idx = [_index(i) for i in indices]
        if packed:
            d = self._open().read_packed(idx, inflight)
            for name, v in d.items():
                if isinstance(v, tuple):
                    d[name] = Packed(*v)
            return d
        return self._open().read_batch(idx, inflight, copy, collate)

    def last_batch_stats(self):
        """The last read_batch's IO: engine (io_uring or threads), reads, peak reads in flight."""
        return self._open().last_batch_stats()

    @property
    def samples_landed(self):
        """Samples read by read_batch so far in this process: a counter another thread may watch."""
        return self._open().landed

    def keys(self):
        return self._open().keys()

    def index_of(self, key):
        return self._open().index_of(key)

    @property
    def sizes(self):
        """Bytes stored per sample (numpy uint64): what reading each costs, from the index where the
        layout has one. The record as stored, framing included (native, wds, tfrecord, recordio;
        a zip: compressed sizes), or the payload (lmdb, a tree)."""
        if self._sizes is None:
            self._sizes = self._open().sizes()
            self._sizes.flags.writeable = False
        return self._sizes

    def shards(self, whole=False):
        """The shards in sample order: (file, bytes, first_sample, samples) each. ``whole``: in a
        copy dssync staged for one rank (a subset view), every shard of the whole dataset, numbered
        as the whole dataset numbers its samples (the same list elsewhere)."""
        return self._open().shards(whole)

    def info(self):
        return _json.loads(self._open().info())

    def verify(self):
        """Every check ``dspack verify`` makes; returns the problems found (empty: clean)."""
        return self._open().verify()

    def close(self):
        if self._reader is not None and self._pid == _os.getpid():
            self._reader.close()
        self._reader = None
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"dspack.Dataset({self._path!r}, {len(self)} samples)"


def _index(i):
    try:
        return _operator.index(i)
    except TypeError:
        raise TypeError(f"sample indices must be integers, not {type(i).__name__}") from None


def open(path):  # noqa: A001 (the package's one entry point, as lmdb.open and zipfile's)
    """Opens the dataset at ``path``: any layout dspack writes, a zip file or a directory tree."""
    return Dataset(path)
