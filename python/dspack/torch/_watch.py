"""Epoch markers for `dsbench watch` (docs/watch.md#epoch-markers).

`dsbench watch -- python train.py` sets DSPACK_WATCH_EPOCHS to a file; a marker appends one JSON
line per event to it, in a single write to an O_APPEND descriptor (the lines of many processes
never interleave). Without the variable, marking does nothing and costs nothing; a write error
never fails the job. The line format is src/epoch_marker.h's.

    for batch in epoch_marker(loader, epoch):     # marks the start and the end, times each
        ...                                       # next() (the data wait), counts samples

    with epoch_marker(epoch=epoch) as m:          # a loop of your own
        for batch in my_loader:
            m.add(samples=len(batch))
"""

import json
import os
import time

ENV = "DSPACK_WATCH_EPOCHS"


def mark(event, epoch, **fields):
    """Appends one marker line ("start" or "end") when watch is listening."""
    path = os.environ.get(ENV)
    if not path:
        return
    try:  # marking never fails the job: numpy numbers, a closed file, anything
        line = {"event": event, "epoch": int(epoch), "pid": os.getpid(), "t": time.time()}
        line.update({k: float(v) for k, v in fields.items() if v is not None})
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
        finally:
            os.close(fd)
    except Exception:
        pass


def _batch_len(batch):
    """Samples in a batch: a tensor's first dimension; a dict's first field; a collated (x, y)
    pair's first tensor; else the length of a list of samples."""
    if isinstance(batch, dict):
        return _batch_len(next(iter(batch.values()))) if batch else 0
    shape = getattr(batch, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else 1
    if isinstance(batch, (list, tuple)) and batch and hasattr(batch[0], "shape"):
        return _batch_len(batch[0])
    try:
        return len(batch)
    except TypeError:
        return 1


class epoch_marker:
    """Marks one epoch for `dsbench watch`: iterate it over a loader, or use it as a context."""

    def __init__(self, loader=None, epoch=0, count=_batch_len):
        self.loader, self.epoch, self.count = loader, epoch, count
        self.samples, self.bytes, self.data_wait_s = 0, None, 0.0
        self._open = False

    def add(self, samples=0, bytes=None, wait_s=0.0):
        self.samples += samples
        self.data_wait_s += wait_s
        if bytes is not None:
            self.bytes = (self.bytes or 0) + bytes

    def __enter__(self):
        mark("start", self.epoch)
        self._open = True
        return self

    def __exit__(self, *exc):
        if self._open:
            self._open = False
            mark("end", self.epoch, samples=self.samples, bytes=self.bytes,
                 data_wait_s=self.data_wait_s)
        return False

    def __iter__(self):
        if self.loader is None:
            raise TypeError("epoch_marker: iterate it over a loader: epoch_marker(loader, epoch)")
        # Without watch, or over a loader that marks its own epochs (ThreadLoader): untouched.
        if not os.environ.get(ENV) or getattr(self.loader, "marks_epochs", False):
            yield from self.loader
            return
        with self:
            it = iter(self.loader)
            while True:
                t = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    return
                self.add(samples=self.count(batch), wait_s=time.perf_counter() - t)
                yield batch
