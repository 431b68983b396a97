"""Rank and world, and size-balanced sample assignment (BalancedDistributedSampler)."""

import os

import numpy as np
import torch.distributed
import torch.utils.data


def rank_and_world(rank=None, world=None):
    """(rank, world): the arguments when given, else torch.distributed's process group when one
    is initialised, else RANK and WORLD_SIZE from the environment (torchrun, mpirun wrappers),
    else (0, 1)."""
    if rank is None or world is None:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            r, w = torch.distributed.get_rank(), torch.distributed.get_world_size()
        else:
            r, w = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        rank = r if rank is None else rank
        world = w if world is None else world
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} of world {world}: need 0 <= rank < world")
    return rank, world


def balanced_assignment(sizes, world, seed=0, drop_last=False):
    """Sample indices of every rank: equal counts, bytes balanced.

    Samples are taken in decreasing size (ties in an order drawn from ``seed``) in rounds of
    ``world``; in each round the largest sample goes to the rank holding the fewest bytes so far,
    the next to the next fewest, and so on. Each rank gets one sample per round, so counts are
    equal; the byte spread ends near the size of the last (smallest) round's samples.

    Uneven counts: with ``drop_last`` the ``len % world`` smallest samples are left out; without,
    the last round is filled with repeats of the smallest samples (each rank gets
    ``ceil(len / world)``; at most ``world - 1`` samples are read twice an epoch), as
    DistributedSampler pads.
    Returns a list of ``world`` int64 arrays, each in assignment order.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n = len(sizes)
    perm = np.random.default_rng(seed).permutation(n)
    order = perm[np.argsort(-sizes[perm], kind="stable")]
    if drop_last:
        per = n // world
        order = order[: per * world]
    else:
        per = -(-n // world)
        pad = per * world - n
        if pad:
            order = np.concatenate([order, order[n - pad :] if n >= pad else np.resize(order, pad)])
    rounds = order.reshape(per, world)
    load = np.zeros(world, dtype=np.int64)
    out = np.empty((world, per), dtype=np.int64)
    for r in range(per):
        ranks = np.argsort(load, kind="stable")  # fewest bytes first
        out[ranks, r] = rounds[r]
        load[ranks] += sizes[rounds[r]]
    return list(out)


class BalancedDistributedSampler(torch.utils.data.Sampler):
    """A DistributedSampler that balances bytes, not only counts (the seed's stragglers).

    Every rank gets the same number of samples and, for a dataset of many samples, bytes within
    1 % of each other (``balanced_assignment``; the test: 10,000 log-normal sizes). Which rank
    reads which sample follows from the sizes and ``seed`` and is the same every epoch (a rank's
    page cache, or its dssync-staged disk, keeps serving it); the order within a rank is
    reshuffled every epoch (``set_epoch``) when ``shuffle``.

    ``dataset``: a dspack Dataset or MapDataset (its ``sizes``), or a sequence of sizes.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        sizes = getattr(dataset, "sizes", dataset)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.rank, self.num_replicas = rank_and_world(rank, num_replicas)
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def indices(self):
        mine = balanced_assignment(self.sizes, self.num_replicas, self.seed,
                                   self.drop_last)[self.rank]
        if self.shuffle:
            mine = np.random.default_rng([self.seed, self.epoch, self.rank]).permutation(mine)
        return mine

    def __iter__(self):
        return iter(self.indices().tolist())

    def __len__(self):
        n = len(self.sizes)
        return n // self.num_replicas if self.drop_last else -(-n // self.num_replicas)
