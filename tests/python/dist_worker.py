"""One rank of tests/python/test_distributed.py: torch.distributed (gloo on loopback), a
DataLoader with two workers over MapDataset + BalancedDistributedSampler and over StreamDataset.
Writes what this rank read as JSON to argv[2]."""

import json
import sys

import torch.distributed as dist
from torch.utils.data import DataLoader

import dspack.torch as dt

path, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")  # MASTER_ADDR/PORT, RANK, WORLD_SIZE from the environment
result = {"rank": dist.get_rank()}
ds = dt.MapDataset(path)
sampler = dt.BalancedDistributedSampler(ds, seed=1)  # rank and world from the process group
for epoch in range(2):
    sampler.set_epoch(epoch)
    loader = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2)
    keys = [k for b in loader for k in b["__key__"]]
    result[f"map{epoch}"] = keys
result["map_bytes"] = int(sum(ds.sizes[i] for i in sampler))
stream = dt.StreamDataset(path, seed=1)
result["stream"] = [s["__key__"] for s in DataLoader(stream, batch_size=None, num_workers=2)]
gathered = [None] * dist.get_world_size()
dist.all_gather_object(gathered, result)  # the ranks agree on one view, through the group
if dist.get_rank() == 0:
    with open(out, "w") as f:
        json.dump(gathered, f)
dist.destroy_process_group()
