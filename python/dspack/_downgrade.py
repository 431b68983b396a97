"""`dsbench watch --downgrade`'s child: the controlled experiment of the write-up (§5), on a
dspack dataset with the job's loader settings (bench/watch/downgrade.h starts it;
docs/watch.md#downgrade).

    /usr/bin/python3 -m dspack._downgrade JOB_JSON

JOB_JSON: {"path", "staged" (a local copy of a remote dataset, or null), "workers", "batch",
"prefetch", "transform" ("none" or "decode": dspack.torch.decode_image), "batches" (per run),
"seed", "cold" (drop the page cache before each run from storage: root)}.

It runs the loader alone, without the model, in short runs of `batches` batches each, after one
untimed batch (the workers' start):
  configured  DataLoader(MapDataset(path), workers, batch, prefetch, transform)
  memory      the same over the same samples held in memory (read before the run): no storage;
              what is left is decode, transform and the workers' IPC, the loader's ceiling
  memory_w0   the samples in memory, num_workers=0: decode and transform alone, in one process
  workers0    MapDataset(path), num_workers=0: storage and decode in one process, no IPC
  staged      the configured loader over the staged local copy (when there is one)
and prints one JSON line: {"runs": {name: {"samples", "seconds", "samples_per_s"}}}. The
attribution is dsbench's (bench/watch/downgrade.cc). An error is one line {"error": message}
and exit 1.
"""

import json
import os
import sys
import time

import torch
import torch.utils.data

import dspack.torch as dt


class _InMemory(torch.utils.data.Dataset):
    def __init__(self, samples, transform):
        self.samples, self.transform = samples, transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        s = self.samples[i]
        return self.transform(s) if self.transform else s


def _loader(dataset, workers, job):
    kw = {"prefetch_factor": job["prefetch"], "persistent_workers": False} if workers else {}
    return torch.utils.data.DataLoader(dataset, batch_size=job["batch"], num_workers=workers,
                                       shuffle=True, collate_fn=list,
                                       generator=torch.Generator().manual_seed(job["seed"]), **kw)


NOTES = []


def _drop(job):
    if not job.get("cold"):
        return
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    except OSError as e:  # a container's read-only /proc/sys: warm runs, said so
        job["cold"] = False
        NOTES.append(f"could not drop the page cache ({e}): the runs read a warm cache")


def _run(dataset, workers, job, storage=True):
    """Samples per second of `batches` batches, after one untimed batch."""
    if storage:
        _drop(job)
    it = iter(_loader(dataset, workers, job))
    next(it)
    n, t = 0, time.perf_counter()
    for _ in range(job["batches"]):
        try:
            n += len(next(it))
        except StopIteration:
            break
    seconds = time.perf_counter() - t
    del it
    return {"samples": n, "seconds": seconds, "samples_per_s": n / seconds if seconds else 0}


def main():
    job = json.loads(sys.argv[1])
    transform = dt.decode_image() if job["transform"] == "decode" else None
    ds = dt.MapDataset(job["path"], transform=transform)
    need = job["batch"] * (job["batches"] + 1)
    if len(ds) < need:
        job["batches"] = max(1, len(ds) // job["batch"] - 1)
        need = job["batch"] * (job["batches"] + 1)
    runs = {"configured": _run(ds, job["workers"], job)}
    raw = dt.MapDataset(job["path"])
    order = torch.randperm(len(raw), generator=torch.Generator().manual_seed(job["seed"]))
    held = [raw[int(i)] for i in order[:need]]
    runs["memory"] = _run(_InMemory(held, transform), job["workers"], job, storage=False)
    runs["memory_w0"] = _run(_InMemory(held, transform), 0, job, storage=False)
    runs["workers0"] = _run(ds, 0, job)
    if job.get("staged"):
        runs["staged"] = _run(dt.MapDataset(job["staged"], transform=transform), job["workers"],
                              job)
    print(json.dumps({"runs": runs, "notes": NOTES}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line for dsbench, which names the dataset
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        sys.exit(1)
