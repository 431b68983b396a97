"""StreamDataset's epoch plan loses no sample (partition="samples"): every sample once per epoch
across all ranks and workers, at most world - 1 dropped or padded, equal counts per rank. The
plan is checked on synthetic shard lists (small and ImageNet-sized) and through real DataLoaders
over a real 997-sample dataset in 1 MiB shards."""

import collections

import pytest
from torch.utils.data import DataLoader

import dspack
import dspack.torch as dt
from conftest import run
from dspack.torch._stream import plan_streams, samples_per_rank


# 1 MiB shards of variable-size images hold uneven counts; 997 samples in all
SMALL = [9, 7, 11, 8, 10, 9, 6, 12] * 12 + [13, 11, 6, 9, 10, 5]
SMALL[-1] += 997 - sum(SMALL)


def shard_list(counts):
    """(name, bytes, first, samples) per shard, as Dataset.shards() gives, from sample counts."""
    out, first = [], 0
    for i, c in enumerate(counts):
        out.append((f"shard-{i:06d}", c * 1000 + (i % 7) * 13, first, c))
        first += c
    return out


def check_epoch(shards, world, workers, uneven, epoch=0):
    """Plans every rank's streams; asserts exactly-once; returns {sample: times read}."""
    n = sum(s[3] for s in shards)
    per = samples_per_rank(shards, world, uneven)
    seen = collections.Counter()
    for rank in range(world):
        streams = plan_streams(shards, rank, world, workers, seed=11, epoch=epoch, uneven=uneven)
        assert sum(len(s) for s in streams) == per, (world, workers, rank)
        assert max(map(len, streams)) - min(map(len, streams)) <= 1  # workers balanced
        for s in streams:
            seen.update(s)
    assert set(seen) <= set(range(n))
    if uneven == "drop":
        assert max(seen.values()) == 1
        assert n - len(seen) == n % world <= world - 1
    else:
        assert len(seen) == n
        assert sum(seen.values()) - n == (-n) % world <= world - 1
    return seen


@pytest.mark.parametrize("uneven", ["drop", "pad"])
def test_plan_every_sample_once_small(uneven):
    shards = shard_list(SMALL)
    for world in (1, 2, 3):
        for workers in (1, 4):
            for epoch in (0, 1):
                check_epoch(shards, world, workers, uneven, epoch)
    a = plan_streams(shards, 1, 3, 4, seed=11, epoch=0)
    b = plan_streams(shards, 1, 3, 4, seed=11, epoch=1)
    assert a != b and sorted(sum(a, [])) == sorted(sum(b, []))  # reshuffled, the same samples


def test_plan_every_sample_once_imagenet_scale():
    # ~550 shards of ~2,330 samples (256 MiB of ~110 KB images), 8 ranks x 8 workers
    counts = [2330 + (i * 37) % 41 - 20 for i in range(550)]
    shards = shard_list(counts)
    for uneven in ("drop", "pad"):
        check_epoch(shards, 8, 8, uneven)
    # the whole-shard split this replaces: what it leaves out of every epoch at this scale
    n = sum(counts)
    whole = set()
    for rank in range(8):
        for s in plan_streams(shards, rank, 8, 8, partition="shards"):
            whole.update(s)
    assert n - len(whole) > 8 * 8 - 1


@pytest.mark.parametrize("world,counts", [
    (3, SMALL),
    (64, [2000 + (i * 7919) % 701 for i in range(1100)]),  # same bytes, 2000-2700 samples each
])
def test_plan_a_rank_reads_its_own_shards_first(world, counts):
    """Equal counts move the fewest samples: a rank reads min(own, per) samples of the shards it
    owns (assign_shards) and only what it lacks from other ranks' shards."""
    shards = shard_list(counts)
    owner = {}
    for r in range(world):
        for s in dspack.assign_shards([s[1] for s in shards], r, world):
            owner[s] = r
    shard_of = {i: k for k, s in enumerate(shards) for i in range(s[2], s[2] + s[3])}
    for uneven in ("drop", "pad"):
        per = samples_per_rank(shards, world, uneven)
        for rank in range(world):
            own = sum(shards[k][3] for k in owner if owner[k] == rank)
            mine = [i for s in plan_streams(shards, rank, world, 4, uneven=uneven) for i in s]
            foreign = sum(owner[shard_of[i]] != rank for i in mine)
            assert foreign == max(0, per - own), (uneven, rank, foreign, per, own)


@pytest.fixture(scope="module")
def ds997(tmp_path_factory, dspack_bin):
    """997 image-sized samples in 1 MiB native shards (the issue's case: whole-shard splitting
    read 958 distinct samples an epoch at 2 ranks x 2 workers here; 953 on the issue's data)."""
    root = tmp_path_factory.mktemp("ds997")
    run(dspack_bin, "synth", "imagenet-like", root / "tree", "--samples", "997", "--seed", "5", "-q")
    run(dspack_bin, "convert", root / "tree", root / "native", "--shard-size", "1MiB", "-q")
    return root / "native"


@pytest.mark.parametrize("workers", [0, 4])
def test_dataloaders_read_every_sample_once(ds997, workers):
    keys = dspack.open(ds997).keys()
    n = len(keys)
    assert n == 997
    for world in (1, 2, 3):
        got = []
        for rank in range(world):
            ds = dt.StreamDataset(ds997, rank=rank, world=world, seed=2)
            mine = [s["__key__"] for s in DataLoader(ds, batch_size=None, num_workers=workers)]
            assert len(mine) == len(ds) == n // world
            got += mine
        assert len(got) == len(set(got)) and n - len(got) == n % world  # <= world - 1 left out
        padded = []
        for rank in range(world):
            ds = dt.StreamDataset(ds997, rank=rank, world=world, seed=2, uneven="pad")
            padded += [s["__key__"] for s in DataLoader(ds, batch_size=None, num_workers=workers)]
        assert set(padded) == set(keys) and len(padded) - n == (-n) % world


def test_whole_shard_partition_still_available(ds997):
    """partition="shards" (a node staged by dssync --rank): whole shards per rank; the drop it
    costs is what the default avoids."""
    got = set()
    for rank in range(2):
        ds = dt.StreamDataset(ds997, rank=rank, world=2, partition="shards")
        got |= {i for s in ds.worker_streams(0, 2) for i in s}
    assert len(got) < 997 - 1
    with pytest.raises(ValueError, match="partition must be"):
        dt.StreamDataset(ds997, partition="bytes")
    # a resume state saved before partition existed came from the whole-shard split
    state = {"epoch": 0, "num_samples": 8, "seed": 0, "world": 1, "batch_size": 1}
    with pytest.raises(ValueError, match="partition='shards' to resume"):
        dt.StreamDataset(ds997).load_state_dict(state)
    dt.StreamDataset(ds997, partition="shards").load_state_dict(state)
