"""StreamDataset: shard streaming for torch, split across ranks and DataLoader workers.

An epoch's plan is a pure function of (shards, rank, world, workers, seed, epoch)
(``plan_streams``); every worker of every rank computes it alike, with no communication.

``partition="samples"`` (the default) loses no sample, as MosaicML Streaming does:

1. Ranks own shards: ``dspack.assign_shards`` (``assign="bytes"``: the largest shard to the rank
   holding the fewest bytes; ``"round-robin"``: shard i to rank i % world). Laid end to end,
   rank 0's shards then rank 1's and so on, they make the epoch's order of N samples.
2. Equal counts. Every rank reads ``per`` samples: ``N // world`` with ``uneven="drop"`` (the
   default) or ``ceil(N / world)`` with ``"pad"``. A rank reads its own samples first, up to
   ``per``; the surplus of ranks owning more makes a pool that the ranks owning fewer take, in
   rank order (``_rank_ranges``). What the pool has left, ``N % world`` samples, is not read
   ("drop"); or the pool ends with the order's first samples, as many as the ranks lack ("pad").
   At most ``world - 1`` samples an epoch are dropped or read twice, at any worker count. A rank
   reads only its own shards, and a short rank also part of a long rank's last shards (with
   "pad", the last short ranks also the first samples again): a shard may be split between ranks.
   The split is the same every epoch.
3. Workers. A rank's ranges, in that order, are cut into ``workers`` consecutive pieces whose
   lengths differ by at most one; a piece is a list of spans (part of one shard each).
4. Shuffle (``shuffle=True``). Per epoch (``set_epoch``), each worker reads its spans in an order
   drawn from (seed, epoch, rank), and samples are permuted within consecutive windows of
   ``buffer`` samples: reads stay sequential within a window's shards, memory stays bounded.

``partition="shards"`` gives each rank whole shards (the split ``dssync --rank r --world w``
stages, so a node staged by dssync holds every shard rank r reads) and each worker whole shards
of its rank, by bytes; ranks then yield equal counts by dropping the last samples of the longest
worker streams (``"drop"``: up to a shard's samples per rank are never read) or repeating their
own first samples (``"pad"``).

Resume (``state_dict``/``load_state_dict``). The DataLoader takes batches from its workers round
robin, skipping workers that are done; given ``batch_size`` (as passed to the DataLoader, with
``drop_last=False``) and the number of samples this rank consumed, each worker finds how many of
each stream's samples were consumed and which worker's batch was next; resumed worker k takes
the stream of the worker k places after that one, minus what was consumed, without reading it:
the resumed epoch yields exactly the rest of the uninterrupted one, in the same order. Epoch and
resume point live in shared memory, so they reach persistent workers too.
"""

import multiprocessing

import numpy as np
import torch.utils.data

import dspack

from ._dist import rank_and_world


def _rank_shards(shards, world, assign):
    sizes = [s[1] for s in shards]
    return [dspack.assign_shards(sizes, r, world, assign) for r in range(world)]


def samples_per_rank(shards, world, uneven="drop", assign="bytes", partition="samples"):
    """Samples every rank yields an epoch (``len(StreamDataset)``)."""
    if partition == "samples":
        n = sum(s[3] for s in shards)
        return n // world if uneven == "drop" else -(-n // world)
    counts = [sum(shards[s][3] for s in mine) for mine in _rank_shards(shards, world, assign)]
    return min(counts) if uneven == "drop" else max(counts)


def _spans(shards, order, starts, lo, hi):
    """The spans (shard, first sample, end sample) covering positions [lo, hi) of ``order``
    (shard k of the order starts at position ``starts[k]``)."""
    out = []
    while lo < hi:
        k = int(np.searchsorted(starts, lo, side="right")) - 1
        take = min(hi - lo, int(starts[k + 1]) - lo)
        first = shards[order[k]][2] + (lo - int(starts[k]))
        out.append((order[k], first, first + take))
        lo += take
    return out


def _rank_ranges(counts, per):
    """Position ranges [lo, hi) of the order each rank reads: ``per`` positions each. Rank r's
    own samples come first (``counts[r]`` of them, starting where the ranks before it end), as
    many as ``per`` allows; the surplus of ranks holding more than ``per`` makes a pool, taken in
    rank order by the ranks holding fewer. "drop": what the pool has left is not read; "pad": the
    pool ends with the order's first positions, as many as the ranks are short."""
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64).tolist()
    pool = [(starts[r] + per, starts[r + 1]) for r in range(len(counts)) if counts[r] > per]
    short = per * len(counts) - starts[-1]
    if short > 0:
        pool.append((0, short))
    ranges, cur = [], 0
    for r, c in enumerate(counts):
        mine = [(starts[r], starts[r] + min(c, per))] if c else []
        need = per - min(c, per)
        while need > 0:
            lo, hi = pool[cur]
            take = min(need, hi - lo)
            mine.append((lo, lo + take))
            need -= take
            if lo + take == hi:
                cur += 1
            else:
                pool[cur] = (lo + take, hi)
        ranges.append(mine)
    return ranges


def _cut(ranges, lo, hi):
    """Positions [lo, hi) of the concatenation of ``ranges``, as ranges."""
    out, at = [], 0
    for a, b in ranges:
        x, y = max(a, a + lo - at), min(b, a + hi - at)
        if x < y:
            out.append((x, y))
        at += b - a
    return out


def _sample_split(shards, per_rank, per):
    """partition="samples": the order (the ranks' shards end to end), where each of its shards
    starts, and the position ranges each rank reads (``_rank_ranges``)."""
    order = [s for mine in per_rank for s in mine]
    starts = np.concatenate([[0], np.cumsum([shards[s][3] for s in order])]).astype(np.int64)
    counts = [sum(shards[s][3] for s in mine) for mine in per_rank]
    return order, starts, _rank_ranges(counts, per)


def _stream(spans, shuffle, buffer, rng):
    """One worker's samples: its spans (shard, first, end), in an order drawn from ``rng`` when
    shuffling, then permuted within windows of ``buffer`` samples."""
    if shuffle:
        spans = [spans[k] for k in rng.permutation(len(spans))]
    parts = [np.arange(a, b) for _, a, b in spans]
    idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    if shuffle and buffer > 1:
        for start in range(0, len(idx), buffer):
            window = idx[start:start + buffer]
            idx[start:start + buffer] = window[rng.permutation(len(window))]
    return idx.tolist()


def plan_streams(shards, rank, world, workers, seed=0, epoch=0, shuffle=True, buffer=1024,
                 uneven="drop", assign="bytes", partition="samples"):
    """Sample indices each of rank ``rank``'s ``workers`` workers yields in ``epoch``, in order.
    ``shards``: (name, bytes, first sample, samples) per shard, as ``Dataset.shards()`` gives."""
    per_rank = _rank_shards(shards, world, assign)
    target = samples_per_rank(shards, world, uneven, assign, partition)
    rng = np.random.default_rng([seed, epoch, rank])
    if partition == "shards":
        return _plan_whole_shards(shards, per_rank[rank], workers, target, shuffle, buffer, rng)
    order, starts, ranges = _sample_split(shards, per_rank, target)
    streams = []
    for w in range(workers):
        cut = _cut(ranges[rank], w * target // workers, (w + 1) * target // workers)
        spans = [sp for a, b in cut for sp in _spans(shards, order, starts, a, b)]
        streams.append(_stream(spans, shuffle, buffer, rng))
    return streams


def _plan_whole_shards(shards, mine, workers, target, shuffle, buffer, rng):
    sizes = [shards[s][1] for s in mine]
    streams = []
    for w in range(workers):
        own = [mine[k] for k in dspack.assign_shards(sizes, w, workers, "bytes")]
        streams.append(_stream([(s, shards[s][2], shards[s][2] + shards[s][3]) for s in own],
                               shuffle, buffer, rng))
    total = sum(len(s) for s in streams)
    if total > target:  # drop from the end of the longest streams
        for _ in range(total - target):
            longest = max(range(workers), key=lambda w: (len(streams[w]), -w))
            streams[longest].pop()
    elif total < target:  # pad with the rank's own first samples, onto the shortest streams
        source = [i for s in streams for i in s]
        for j in range(target - total):
            shortest = min(range(workers), key=lambda w: (len(streams[w]), w))
            streams[shortest].append(source[j % len(source)])
    return streams


def shards_read(shards, world, uneven="drop", assign="bytes", partition="samples"):
    """The shards (indices) each rank reads samples of in any epoch, without listing the samples:
    a rank's split is the same every epoch."""
    per_rank = _rank_shards(shards, world, assign)
    if partition == "shards":
        return [set(mine) for mine in per_rank]
    order, starts, ranges = _sample_split(shards, per_rank,
                                          samples_per_rank(shards, world, uneven))
    out = []
    for mine in ranges:
        read = set()
        for lo, hi in mine:
            k0 = int(np.searchsorted(starts, lo, side="right")) - 1
            k1 = int(np.searchsorted(starts, hi - 1, side="right")) - 1
            read.update(s for s in order[k0:k1 + 1] if shards[s][3])
        out.append(read)
    return out


class _ViewMap:
    """Sample numbers of the whole dataset to those of a subset view of it (the view numbers its
    present shards' samples 0..n-1 in dataset order)."""

    def __init__(self, view, whole):
        in_view = {name: first for name, _, first, _ in view}
        # starts from the counts: a reader may give an empty shard first_sample 0
        self.starts = np.concatenate([[0], np.cumsum([s[3] for s in whole])[:-1]]).astype(np.int64)
        self.offset = np.array([in_view.get(s[0], int(b)) - int(b)
                                for s, b in zip(whole, self.starts)], dtype=np.int64)

    def __call__(self, idx):
        idx = np.asarray(idx, dtype=np.int64)
        return (idx + self.offset[np.searchsorted(self.starts, idx, side="right") - 1]).tolist()


def _names(shards):
    more = f" and {len(shards) - 3} more" if len(shards) > 3 else ""
    return f"shard {', '.join(shards[:3])}{more}"


class StreamDataset(torch.utils.data.IterableDataset):
    def __init__(self, path, shuffle=True, seed=0, buffer=1024, batch_size=1, uneven="drop",
                 assign="bytes", transform=None, rank=None, world=None, read_ahead=64,
                 inflight=32, copy=True, partition="samples"):
        if uneven not in ("drop", "pad"):
            raise ValueError(f"uneven must be 'drop' or 'pad', not {uneven!r}")
        if partition not in ("samples", "shards"):
            raise ValueError(f"partition must be 'samples' or 'shards', not {partition!r}")
        if assign not in ("bytes", "round-robin"):
            raise ValueError(f"assign must be 'bytes' or 'round-robin', not {assign!r}")
        if buffer < 1 or batch_size < 1 or read_ahead < 1:
            raise ValueError("buffer, batch_size and read_ahead must be >= 1")
        self.path = str(path)
        self.shuffle, self.seed, self.buffer = shuffle, seed, buffer
        self.batch_size, self.uneven, self.assign = batch_size, uneven, assign
        self.partition = partition
        self.transform, self.read_ahead, self.inflight, self.copy = transform, read_ahead, inflight, copy
        self.rank, self.world = rank_and_world(rank, world)
        self._ds = dspack.open(self.path)
        self._shards = self._ds.shards()
        # A copy dssync staged for one rank (a subset view) is planned as the whole dataset it
        # came from, so every rank splits alike; its samples are then read from the copy.
        whole = self._ds.shards(whole=True)
        self._to_view = None
        if whole != self._shards:
            self._to_view = _ViewMap(self._shards, whole)
            present = {s[0] for s in self._shards}
            self._shards = whole
        n = sum(s[3] for s in self._shards)
        if partition == "shards" and len(self._shards) < self.world:
            raise ValueError(
                f"{self.path}: {len(self._shards)} shards for {self.world} ranks; every rank "
                "needs one (convert again with a smaller --shard-size, or partition='samples')")
        if n < self.world:
            raise ValueError(f"{self.path}: {n} samples for {self.world} ranks; every rank needs one")
        if self._to_view is not None:
            self._check_view(present)
        # epoch, resume epoch, resume samples: shared with the workers (forked or spawned).
        self._state = multiprocessing.RawArray("q", [0, -1, 0])
        self._yielded = 0  # samples yielded in this process (num_workers=0)

    def _check_view(self, present):
        """On a staged copy (holding the shards named ``present``), every rank must find its
        samples in its own copy, or every rank raises (one rank failing alone would leave the
        others waiting at their first collective): a rank's copy is taken to hold the shards
        dssync stages for it with this world and assign."""
        reason = self._ds.info().get("subset", {}).get("reason", "a subset view")
        fix = ("partition='shards' reads just the shards dssync staged for a rank, given the same "
               "world and assign" if self.partition == "samples" else
               f"stage it with dssync --rank {self.rank} --world {self.world} --assign {self.assign}")
        staged = _rank_shards(self._shards, self.world, self.assign)
        reads = shards_read(self._shards, self.world, self.uneven, self.assign, self.partition)
        for r in range(self.world):
            lacking = sorted(self._shards[k][0] for k in reads[r] - set(staged[r]))
            if lacking:
                raise ValueError(
                    f"{self.path} ({reason}): rank {r} of {self.world} (partition="
                    f"{self.partition!r}) reads samples of {_names(lacking)}, which dssync does "
                    f"not stage for it; {fix}")
        absent = sorted(self._shards[k][0] for k in reads[self.rank]
                        if self._shards[k][0] not in present)
        if absent:  # a copy staged for another rank, world or assign
            raise ValueError(f"{self.path} ({reason}): {_names(absent)} not here; {fix}")

    # --- epochs and resume ----------------------------------------------------------------------
    def set_epoch(self, epoch):
        self._state[0] = epoch

    @property
    def epoch(self):
        return self._state[0]

    def state_dict(self, num_samples=None):
        """The resume point: ``num_samples`` consumed by this rank in the current epoch (default:
        the samples this process yielded, right when the DataLoader has no workers)."""
        return {"epoch": self.epoch, "num_samples": self._yielded if num_samples is None else num_samples,
                "seed": self.seed, "world": self.world, "batch_size": self.batch_size,
                "partition": self.partition}

    def load_state_dict(self, state):
        for k in ("seed", "world", "batch_size", "partition"):
            # a state without "partition" predates it: it was saved by the whole-shard split
            got = state.get(k, "shards" if k == "partition" else None)
            if got != getattr(self, k):
                raise ValueError(f"resume state has {k}={got!r}, this dataset {getattr(self, k)!r}: "
                                 f"open the dataset with {k}={got!r} to resume it")
        self._state[0] = state["epoch"]
        self._state[1] = state["epoch"]
        self._state[2] = state["num_samples"]

    # --- the plan -------------------------------------------------------------------------------
    def __len__(self):
        """Samples this rank yields per epoch (all its workers together)."""
        return self._target()

    def _target(self):
        return samples_per_rank(self._shards, self.world, self.uneven, self.assign, self.partition)

    def worker_streams(self, epoch, workers):
        """Sample indices each of this rank's ``workers`` workers yields in ``epoch``, in order."""
        return plan_streams(self._shards, self.rank, self.world, workers, self.seed, epoch,
                            self.shuffle, self.buffer, self.uneven, self.assign, self.partition)

    @staticmethod
    def consumed_per_worker(lengths, batch_size, num_samples):
        """How many samples of each worker's stream the first ``num_samples`` the DataLoader
        yielded came from (batches are taken round robin, skipping workers that are done), and
        the worker whose batch would have come next."""
        batches = [-(-n // batch_size) for n in lengths]
        taken = [0] * len(lengths)
        left, last = -(-num_samples // batch_size), -1
        while left > 0 and any(taken[w] < batches[w] for w in range(len(lengths))):
            for w in range(len(lengths)):
                if left > 0 and taken[w] < batches[w]:
                    taken[w] += 1
                    left -= 1
                    last = w
        return [min(t * batch_size, n) for t, n in zip(taken, lengths)], (last + 1) % len(lengths)

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        epoch = self._state[0]
        streams = self.worker_streams(epoch, workers)
        stream = streams[worker]
        if self._state[1] == epoch:
            # The resumed DataLoader starts its round robin at worker 0; the uninterrupted one
            # would have gone on at worker `nxt`: worker k takes stream (nxt + k) % workers.
            skip, nxt = self.consumed_per_worker([len(s) for s in streams], self.batch_size,
                                                 self._state[2])
            mine = (nxt + worker) % workers
            stream = streams[mine][skip[mine]:]
        if self._to_view is not None:
            stream = self._to_view(stream)
        self._yielded = 0
        ds = self._ds if info is None else info.dataset._ds  # the worker's own copy
        for start in range(0, len(stream), self.read_ahead):
            for sample in ds.read_batch(stream[start:start + self.read_ahead], self.inflight,
                                        self.copy):
                self._yielded += 1
                yield self.transform(sample) if self.transform is not None else sample

    def close(self):
        self._ds.close()
