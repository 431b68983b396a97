"""Two ranks of torch.distributed (gloo on 127.0.0.1), two DataLoader workers each: every sample
exactly once per epoch across all of them, equal counts per rank, bytes balanced."""

import json
import os
import pathlib
import socket
import subprocess
import sys

import pytest

import dspack

WORKER = pathlib.Path(__file__).with_name("dist_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(path, out, world=2):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(world))
    procs = [subprocess.Popen([sys.executable, WORKER, path, out], env=dict(env, RANK=str(r)))
             for r in range(world)]
    codes = [p.wait(timeout=300) for p in procs]
    assert codes == [0] * world
    return json.loads(pathlib.Path(out).read_text())


@pytest.mark.parametrize("which", ["divisible", "indivisible"])
def test_two_ranks_two_workers(data, tiny, tmp_path, which):
    path = str(data["native"] if which == "divisible" else tiny)  # 300 or 301 samples
    ranks = run_ranks(path, tmp_path / "out.json")
    ds = dspack.open(path)
    n, keys = len(ds), set(ds.keys())
    for epoch in (0, 1):
        per_rank = [r[f"map{epoch}"] for r in ranks]
        assert len(per_rank[0]) == len(per_rank[1]) == -(-n // 2)
        flat = per_rank[0] + per_rank[1]
        assert set(flat) == keys
        assert len(flat) - len(set(flat)) == n % 2  # padded: one sample read twice when odd
    assert ranks[0]["map0"] != ranks[0]["map1"]  # set_epoch reshuffles
    b0, b1 = ranks[0]["map_bytes"], ranks[1]["map_bytes"]
    assert abs(b0 - b1) <= 0.01 * max(b0, b1) or n < 10000  # the 1 % bound is for big datasets
    assert abs(b0 - b1) <= max(ds.sizes)  # here: at most one sample's bytes apart
    # StreamDataset (uneven="drop", partition="samples"): N // 2 each, no sample twice, and
    # together every sample but N % 2.
    s0, s1 = ranks[0]["stream"], ranks[1]["stream"]
    assert len(s0) == len(s1) == n // 2 and len(set(s0) | set(s1)) == 2 * (n // 2)
