"""`dsbench replay --loader torch`'s child: the same job as the C++ model, run by a real
torch.utils.data.DataLoader (bench/replay/torch_loader.h starts it; docs/dsbench.md#the-real-dataloader).

    /usr/bin/python3 -m dspack._replay JOB_JSON

JOB_JSON: {"path", "kind" ("tree" or a layout), "mode" ("map" or "stream"), "workers", "batch",
"prefetch", "seed", "samples" (per epoch), "compute_time" (seconds per batch), "batch_reads"
(0, or N: MapDataset(batch_reads=True, inflight=N))}.

Protocol, one line each way per epoch, so that dsbench can evict the page cache and measure
residency between epochs: dsbench writes "epoch E"; this process runs the epoch and answers one
JSON line {"epoch", "seconds", "samples", "bytes" (the payload the batches brought to this
process: default_collate, as a training loop gets them), "first_batch_seconds", "waits_ns" (the
consumer's data wait before each batch after the first), "au", "cpu_seconds" (this process and
its DataLoader workers, reaped at the epoch's end: RUSAGE_CHILDREN)}. End of input ends it; an
error is one line {"error": message} and exit 1.

How each input is read:
  tree   torchvision.datasets.ImageFolder(root, loader=raw bytes): one sample per file, class
         from its top-level folder, no decode (dsbench measures storage, not JPEG decoding)
  other  dspack.torch.MapDataset (map) or a DataLoader over it in storage order (stream)
Workers are not persistent: each epoch starts them anew and each opens the dataset itself, as
the C++ model's Reopen does. map: RandomSampler seeded with (seed, epoch).
"""

import json
import os
import resource
import sys
import time


def cpu_now():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def raw_file(path):
    with open(path, "rb") as f:
        return f.read()


def count(batch):
    """(samples, bytes) of a batch as default_collate made it, in this (the training) process."""
    if isinstance(batch, list):  # ImageFolder: [list of bytes, tensor of classes]
        return len(batch[0]), sum(len(b) for b in batch[0])
    return len(batch["__key__"]), sum(len(v) for k, vs in batch.items() if k != "__key__"
                                      for v in vs if isinstance(v, (bytes, bytearray)))


def make_dataset(job):
    if job["kind"] == "tree":
        import torchvision

        return torchvision.datasets.ImageFolder(job["path"], loader=raw_file,
                                                is_valid_file=lambda p: True)
    import dspack.torch

    n = job.get("batch_reads", 0)
    if n:  # a batch is one read_batch in the worker (__getitems__), n reads in flight
        return dspack.torch.MapDataset(job["path"], batch_reads=True, inflight=n)
    return dspack.torch.MapDataset(job["path"])


def run_epoch(job, ds, epoch):
    import torch
    from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, Subset

    n = min(job["samples"], len(ds))
    if job["mode"] == "map":
        g = torch.Generator()
        g.manual_seed(job["seed"] * 1_000_003 + epoch)
        sampler = RandomSampler(ds, generator=g, num_samples=n)
    else:
        sampler = SequentialSampler(Subset(ds, range(n)))
    workers = job["workers"]
    # default_collate: the batches, bytes and all, reach this process as a training loop's do
    loader = DataLoader(ds, batch_size=job["batch"], sampler=sampler, num_workers=workers,
                        prefetch_factor=job["prefetch"] if workers else 2,
                        persistent_workers=False)
    compute = job["compute_time"]
    c0 = cpu_now()
    t0 = ready = time.perf_counter()
    first = 0.0
    first_done = t0
    samples = nbytes = 0
    waits, computed = [], 0.0
    for b, batch in enumerate(loader):
        k, nb = count(batch)
        now = time.perf_counter()
        if b == 0:
            first = now - t0
        else:
            waits.append(int((now - ready) * 1e9))
        if compute > 0:
            time.sleep(compute)
        ready = time.perf_counter()
        if b == 0:
            first_done = ready
        else:
            computed += compute
        samples += k
        nbytes += nb
    del loader  # the workers are joined: their CPU is in RUSAGE_CHILDREN
    t1 = time.perf_counter()
    after_first = t1 - first_done
    return {"epoch": epoch, "seconds": t1 - t0, "samples": samples, "bytes": nbytes,
            "first_batch_seconds": first, "waits_ns": waits,
            "au": computed / after_first if compute > 0 and after_first > 0 else 0.0,
            "cpu_seconds": cpu_now() - c0}


def main():
    job = json.loads(sys.argv[1])
    out = sys.stdout
    try:
        ds = make_dataset(job)
        print(json.dumps({"ready": True, "samples": len(ds)}), file=out, flush=True)
        for line in sys.stdin:
            epoch = int(line.split()[1])
            print(json.dumps(run_epoch(job, ds, epoch)), file=out, flush=True)
    except Exception as e:  # one line for dsbench to report, naming the type
        print(json.dumps({"error": f"{type(e).__name__}: {one_line(e)}"}), file=out, flush=True)
        os._exit(1)


def one_line(e):
    """The error's own message: a DataLoader re-raises a worker's exception with the worker's
    traceback in the message, whose last line is the original "module.Type: message"."""
    text = str(e)
    if "Original Traceback" in text:
        last = [line for line in text.splitlines() if line.strip()][-1]
        return last.split(": ", 1)[1] if ": " in last else last
    return " ".join(text.split())


if __name__ == "__main__":
    main()
