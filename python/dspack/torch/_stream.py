"""StreamDataset: shard streaming for torch, split across ranks and DataLoader workers.

An epoch's plan is a pure function of (shards, rank, world, workers, seed, epoch); every worker
of every rank computes it alike, with no communication:

1. Ranks. Shards go to ranks by ``dspack.assign_shards`` (``assign="bytes"``: the largest shard
   to the rank holding the fewest bytes; ``"round-robin"``: shard i to rank i % world), the
   function ``dssync --rank r --world w --assign`` uses, so a node staged by dssync holds exactly
   its rank's shards. The split is the same every epoch. With ``"bytes"`` the ranks' bytes differ
   by at most one shard.
2. Equal counts. Every rank yields ``target`` samples an epoch: with ``uneven="drop"`` (the
   default) the smallest rank's count, the others leaving out the last samples of their longest
   worker streams; with ``uneven="pad"`` the largest rank's count, the others repeating their
   own first samples (appended to their shortest worker streams).
3. Workers. A rank's shards go to its DataLoader workers by bytes the same way (get_worker_info);
   a worker with no shard yields nothing.
4. Shuffle (``shuffle=True``). Per epoch (``set_epoch``), each worker's shards are read in an
   order drawn from (seed, epoch), and samples are permuted within consecutive windows of
   ``buffer`` samples: reads stay sequential within a window's shards, memory stays bounded.

Resume (``state_dict``/``load_state_dict``). The DataLoader takes batches from its workers round
robin, skipping workers that are done; given ``batch_size`` (as passed to the DataLoader, with
``drop_last=False``) and the number of samples this rank consumed, each worker finds how many of
each stream's samples were consumed and which worker's batch was next; resumed worker k takes
the stream of the worker k places after that one, minus what was consumed, without reading it:
the resumed epoch yields exactly the rest of the uninterrupted one, in the same order. Epoch and resume point live in shared memory, so they reach
persistent workers too.
"""

import multiprocessing

import numpy as np
import torch.utils.data

import dspack

from ._dist import rank_and_world


class StreamDataset(torch.utils.data.IterableDataset):
    def __init__(self, path, shuffle=True, seed=0, buffer=1024, batch_size=1, uneven="drop",
                 assign="bytes", transform=None, rank=None, world=None, read_ahead=64,
                 inflight=32, copy=True):
        if uneven not in ("drop", "pad"):
            raise ValueError(f"uneven must be 'drop' or 'pad', not {uneven!r}")
        if assign not in ("bytes", "round-robin"):
            raise ValueError(f"assign must be 'bytes' or 'round-robin', not {assign!r}")
        if buffer < 1 or batch_size < 1 or read_ahead < 1:
            raise ValueError("buffer, batch_size and read_ahead must be >= 1")
        self.path = str(path)
        self.shuffle, self.seed, self.buffer = shuffle, seed, buffer
        self.batch_size, self.uneven, self.assign = batch_size, uneven, assign
        self.transform, self.read_ahead, self.inflight, self.copy = transform, read_ahead, inflight, copy
        self.rank, self.world = rank_and_world(rank, world)
        self._ds = dspack.open(self.path)
        self._shards = self._ds.shards()
        if len(self._shards) < self.world:
            raise ValueError(
                f"{self.path}: {len(self._shards)} shards for {self.world} ranks; every rank "
                "needs one (convert again with a smaller --shard-size)")
        # epoch, resume epoch, resume samples: shared with the workers (forked or spawned).
        self._state = multiprocessing.RawArray("q", [0, -1, 0])
        self._yielded = 0  # samples yielded in this process (num_workers=0)

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
                "seed": self.seed, "world": self.world, "batch_size": self.batch_size}

    def load_state_dict(self, state):
        for k in ("seed", "world", "batch_size"):
            if state[k] != getattr(self, k):
                raise ValueError(f"resume state has {k}={state[k]}, this dataset {getattr(self, k)}")
        self._state[0] = state["epoch"]
        self._state[1] = state["epoch"]
        self._state[2] = state["num_samples"]

    # --- the plan -------------------------------------------------------------------------------
    def __len__(self):
        """Samples this rank yields per epoch (all its workers together)."""
        return self._target()

    def _rank_shards(self):
        sizes = [s[1] for s in self._shards]
        return [dspack.assign_shards(sizes, r, self.world, self.assign) for r in range(self.world)]

    def _target(self):
        counts = [sum(self._shards[s][3] for s in mine) for mine in self._rank_shards()]
        return min(counts) if self.uneven == "drop" else max(counts)

    def worker_streams(self, epoch, workers):
        """Sample indices each of this rank's ``workers`` workers yields in ``epoch``, in order."""
        per_rank = self._rank_shards()
        counts = [sum(self._shards[s][3] for s in mine) for mine in per_rank]
        target = min(counts) if self.uneven == "drop" else max(counts)
        mine = per_rank[self.rank]
        sizes = [self._shards[s][1] for s in mine]
        rng = np.random.default_rng([self.seed, epoch, self.rank])
        streams = []
        for w in range(workers):
            shards = [mine[k] for k in dspack.assign_shards(sizes, w, workers, "bytes")]
            if self.shuffle:
                shards = [shards[k] for k in rng.permutation(len(shards))]
            parts = [np.arange(self._shards[s][2], self._shards[s][2] + self._shards[s][3])
                     for s in shards]
            idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
            if self.shuffle and self.buffer > 1:
                for start in range(0, len(idx), self.buffer):
                    window = idx[start:start + self.buffer]
                    idx[start:start + self.buffer] = window[rng.permutation(len(window))]
            streams.append(list(idx))
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
        self._yielded = 0
        ds = self._ds if info is None else info.dataset._ds  # the worker's own copy
        for start in range(0, len(stream), self.read_ahead):
            for sample in ds.read_batch(stream[start:start + self.read_ahead], self.inflight,
                                        self.copy):
                self._yielded += 1
                yield self.transform(sample) if self.transform is not None else sample

    def close(self):
        self._ds.close()
