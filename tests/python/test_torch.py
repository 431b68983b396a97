"""dspack.torch inside real torch DataLoaders: fork and spawn workers, errors from workers, the
threaded loader, the size-balanced sampler."""

import collections
import shutil

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import dspack
import dspack.torch as dt
from test_read import flip_byte_of_sample


def keys_of(batches):
    return [k for b in batches for k in b["__key__"]]


@pytest.mark.parametrize("context", ["fork", "spawn"])
@pytest.mark.parametrize("layout", ["native", "lmdb"])
def test_map_dataset_every_sample_once_per_epoch(data, context, layout):
    ds = dt.MapDataset(data[layout])
    first = ds[0]  # read in the parent before the workers fork: nothing of it crosses
    loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2,
                        multiprocessing_context=context, persistent_workers=True,
                        prefetch_factor=2, pin_memory=True)  # CPU-only torch: pin is a no-op
    want = sorted(dspack.open(data[layout]).keys())
    for _epoch in range(2):
        keys = keys_of(loader)
        assert sorted(keys) == want
    assert ds[0] == first  # and the parent's reader still works
    labels = next(iter(loader))["cls"]
    assert labels.dtype == torch.int64


def test_a_dataloader_batch_is_one_read_batch(data):
    ds = dt.MapDataset(data["native"], inflight=8, batch_reads=True)
    seen = []
    ds.transform = lambda s: seen.append(s["__key__"]) or s
    loader = DataLoader(ds, batch_size=16, shuffle=False, num_workers=0)
    batches = list(loader)
    transformed = list(seen)  # the transform ran on every sample, in order
    stats = ds.dataset.last_batch_stats()  # the last batch: 300 % 16 = 12 samples in one call
    assert 1 <= stats["reads"] <= 12, stats  # 12 neighbours: joined into a few reads
    if stats["engine"] == "io_uring" and stats["reads"] > 1:
        assert stats["peak_inflight"] > 1
    assert keys_of(batches) == transformed == [ds[i]["__key__"] for i in range(len(ds))]
    assert [len(v) for v in batches[0]["JPEG"]] == [len(ds[i]["JPEG"]) for i in range(16)]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_packed_batches_through_dataloader_workers(data, context):
    ds = dt.MapDataset(data["native"], packed=True)
    ds.dataset.read_batch([0, 1])  # the parent's thread has an io_uring before the fork: unused
    loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2,
                        multiprocessing_context=context, collate_fn=dt.packed_collate)
    plain = dspack.open(data["native"])
    seen = []
    for b in loader:
        jpeg = b["JPEG"]
        assert isinstance(jpeg, dspack.Packed) and isinstance(jpeg.data, torch.Tensor)
        assert jpeg.data.dtype == torch.uint8 and len(jpeg) == len(b["__key__"])
        assert b["cls"].dtype == torch.int64
        for j, key in enumerate(b["__key__"]):
            want = plain[plain.index_of(key)]
            assert bytes(jpeg[j].numpy()) == want["JPEG"] and int(b["cls"][j]) == want["cls"]
        seen += b["__key__"]
    assert sorted(seen) == sorted(plain.keys())  # every sample once
    with pytest.raises(ValueError):
        dt.MapDataset(data["native"], packed=True, transform=lambda s: s)


def test_a_corrupt_sample_reaches_the_main_process_intact(data, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(data["native"], bad)
    key, shard = flip_byte_of_sample(bad, 17)
    loader = DataLoader(dt.MapDataset(bad), batch_size=8, num_workers=2)
    with pytest.raises(dspack.CorruptSampleError) as e:
        list(loader)
    assert key in str(e.value) and shard in str(e.value)


def test_thread_loader_yields_what_the_dataloader_yields(data):
    ds = dt.MapDataset(data["native"])
    want = list(DataLoader(ds, batch_size=32, num_workers=2))
    got = list(dt.ThreadLoader(ds, batch_size=32, threads=3, prefetch=2))
    assert len(got) == len(want) == len(dt.ThreadLoader(ds, batch_size=32))
    for g, w in zip(got, want):
        assert g["__key__"] == w["__key__"] and g["JPEG"] == w["JPEG"]
        assert torch.equal(g["cls"], w["cls"])
    # shuffled, dropping the last partial batch: every batch full, no sample twice
    loader = dt.ThreadLoader(ds, batch_size=32, shuffle=True, drop_last=True, seed=1)
    keys = keys_of(loader)
    assert len(keys) == 288 and len(set(keys)) == 288
    loader.set_epoch(1)
    assert keys_of(loader) != keys
    # a transform runs per sample and default_collate stacks the results
    decode = dt.ThreadLoader(ds, batch_size=4, transform=lambda s: len(s["JPEG"]))
    assert torch.equal(next(iter(decode)), torch.tensor([len(ds[i]["JPEG"]) for i in range(4)]))


def test_balanced_sampler_counts_equal_bytes_within_one_percent():
    rng = np.random.default_rng(0)
    sizes = rng.lognormal(mean=np.log(110_000), sigma=0.8, size=10_001).astype(np.int64)
    for world in (2, 3, 8):
        ranks = [dt.BalancedDistributedSampler(sizes, num_replicas=world, rank=r, seed=5)
                 for r in range(world)]
        got = [s.indices() for s in ranks]
        assert len({len(g) for g in got}) == 1 and len(got[0]) == len(ranks[0])
        everyone = np.concatenate(got)
        assert set(everyone.tolist()) == set(range(len(sizes)))  # padded: every sample, some twice
        assert len(everyone) - len(sizes) == (-len(sizes)) % world
        load = [int(sizes[g].sum()) for g in got]
        assert max(load) <= min(load) * 1.01, (world, load)
        dropped = [dt.BalancedDistributedSampler(sizes, world, r, drop_last=True).indices()
                   for r in range(world)]
        flat = np.concatenate(dropped)
        assert len(flat) == len(set(flat.tolist())) == len(sizes) // world * world
    a, b = dt.BalancedDistributedSampler(sizes, 2, 0), dt.BalancedDistributedSampler(sizes, 2, 0)
    b.set_epoch(1)
    assert list(a) != list(b) and sorted(a) == sorted(b)  # reshuffled, the same samples


def stream_keys(path, **kw):
    workers = kw.pop("workers", 0)
    context = kw.pop("context", None)
    ds = dt.StreamDataset(path, **kw)
    return [s["__key__"] for s in DataLoader(ds, batch_size=None, num_workers=workers,
                                             multiprocessing_context=context if workers else None)]


def test_stream_dataset_epochs_and_counts(data, tiny):
    all_keys = sorted(dspack.open(data["native"]).keys())
    for workers in (0, 2):
        got = stream_keys(data["native"], workers=workers, seed=3)
        assert sorted(got) == all_keys
    spawned = stream_keys(data["native"], workers=2, seed=3, context="spawn")
    assert spawned == stream_keys(data["native"], workers=2, seed=3)  # same plan, fork or spawn
    # set_epoch: a new order, deterministic
    ds = dt.StreamDataset(data["native"], seed=3)
    e0 = [s["__key__"] for s in ds]
    ds.set_epoch(1)
    e1 = [s["__key__"] for s in ds]
    assert e0 != e1 and sorted(e0) == sorted(e1)
    assert e1 == [s["__key__"] for s in ds]
    unshuffled = stream_keys(data["native"], shuffle=False)
    assert unshuffled == dspack.open(data["native"]).keys()  # shard order, sample order
    # indivisible: N // world each, N % world left out; or ceil(N / world), the rest read twice
    n = len(dspack.open(tiny))
    for uneven in ("drop", "pad"):
        per_rank = [stream_keys(tiny, rank=r, world=3, workers=2, uneven=uneven) for r in range(3)]
        counts = {len(k) for k in per_rank}
        assert len(counts) == 1, (uneven, [len(k) for k in per_rank])
        flat = [k for keys in per_rank for k in keys]
        if uneven == "drop":
            assert len(flat) == len(set(flat)) == n - n % 3
        else:
            assert len(set(flat)) == n and len(flat) == n + (-n) % 3
        assert counts.pop() == len(dt.StreamDataset(tiny, rank=0, world=3, uneven=uneven))


@pytest.mark.parametrize("workers", [0, 2, 3])
def test_stream_dataset_resumes_mid_epoch(data, workers):
    kw = dict(seed=9, batch_size=8, buffer=16)
    ds = dt.StreamDataset(data["native"], **kw)
    ds.set_epoch(2)
    loader = DataLoader(ds, batch_size=8, num_workers=workers)
    full = keys_of(loader)
    for stop in (0, 6, len(loader) - 2):  # early, mid, and after a worker may have run dry
        head = []
        for i, b in enumerate(loader):
            head += b["__key__"]
            if i == stop:
                break
        state = ds.state_dict(None if workers == 0 else len(head))
        assert state["num_samples"] == len(head)
        resumed_ds = dt.StreamDataset(data["native"], **kw)
        resumed_ds.load_state_dict(state)
        rest = keys_of(DataLoader(resumed_ds, batch_size=8, num_workers=workers,
                                  persistent_workers=workers > 0))
        assert head + rest == full, (workers, stop)


def test_dssync_stages_exactly_the_shards_stream_dataset_gives_a_rank(data, tmp_path, dssync_bin):
    from conftest import run

    ds = dspack.open(data["native"])
    shards = ds.shards()
    owned = [{shards[s][0] for s in dspack.assign_shards([s[1] for s in shards], r, 3)}
             for r in range(3)]
    any_short = False
    for r in range(3):
        whole = dt.StreamDataset(data["native"], rank=r, world=3)
        needs = {next(s[0] for s in shards if s[2] <= i < s[2] + s[3])
                 for w in whole.worker_streams(0, 1) for i in w}
        any_short |= not needs <= owned[r]
    assert any_short  # this dataset has a rank short of its share (the error below needs one)
    for rank in range(3):
        run(dssync_bin, data["native"], tmp_path / f"r{rank}", "--rank", rank, "--world", 3, "-q")
        staged = sorted(p.name for p in (tmp_path / f"r{rank}").glob("shard-*"))
        stream = dt.StreamDataset(data["native"], rank=rank, world=3, shuffle=False,
                                  uneven="pad", partition="shards")
        mine = sorted({shards[s][0] for s in dspack.assign_shards([s[1] for s in shards], rank, 3)})
        assert staged == mine
        wanted = collections.Counter()
        for w in stream.worker_streams(0, 2):
            for i in w:
                wanted[next(s[0] for s in shards if s[2] <= i < s[2] + s[3])] += 1
        assert set(wanted) == set(mine)  # every sample the rank reads is in a staged shard
        # The staged copy (a subset view) is planned as the whole dataset: rank r reads from it
        # exactly what it reads from the whole, in the same order.
        def keys(path, **kw):
            return [x["__key__"] for x in dt.StreamDataset(path, rank=rank, world=3, seed=4, **kw)]

        copy = tmp_path / f"r{rank}"
        assert keys(copy, partition="shards") == keys(data["native"], partition="shards")
        # partition="samples" also reads other ranks' shards where a rank owns fewer samples
        # than its share: a copy lacks them, so every rank's copy says which and what to do (all
        # ranks, or the others would wait for the one that failed).
        with pytest.raises(ValueError, match=r"rank \d of 3 .*not stage.*partition='shards'"):
            dt.StreamDataset(copy, rank=rank, world=3)
