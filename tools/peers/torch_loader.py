#!/usr/bin/python3
"""The dspack Python package against PyTorch's own loaders (issue 13's T1-T5), side by side in one
run, medians of ROUNDS, on `dspack synth imagenet-like --samples N`.

  T1  DataLoader(num_workers=4, batch 32) over MapDataset(native) vs ImageFolder(tree, raw-bytes
      loader), cold (drop_caches before each run), local disk; MapDataset reads one sample at a
      time (the default); also MapDataset(batch_reads=True) (a batch is one read_batch in the
      worker) and MapDataset(packed=True) (a batch as one tensor per field)
  T2  the same through `dsbench slowfs --meta-latency 1ms` (emulated NFS)
  T3  ThreadLoader(threads=4) vs DataLoader(num_workers=4), native, warm: samples/s and
      CPU-seconds per sample (the workers' CPU included: /proc/PID/stat of each live worker)
  T4  Python overhead: warm read_batch from 4 threads vs `dsbench replay` warm, same job; as
      bytes, as arrays (copy=False) and packed (packed=True: one buffer per field and batch)
  T5  the C++ model vs the real DataLoader (`dsbench replay --loader model|torch`), every layout
      and the tree, cold

Each measurement runs in a fresh Python process (`--child`), which prints one JSON line; timings
exclude imports and dataset construction (ImageFolder's scan, dspack.open), as a training job's
epoch would. Usage (root: drop_caches, FUSE):
  [ONLY=T2,T4] tools/peers/torch_loader.sh [SAMPLES=5000] [ROUNDS=3]
ONLY runs only the comparisons named (default: all five); T2r (not in the default) adds T2
through mounts that delay every read by 1 ms too.
"""

import json
import os
import statistics
import subprocess
import sys
import time

BATCH, WORKERS, PREFETCH = 32, 4, 2


# --- children: one measurement each ---------------------------------------------------------------
def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def self_cpu():
    t = os.times()
    return t.user + t.system


def child(spec):
    import torch  # noqa: F401 (imported before the clock starts)
    from torch.utils.data import DataLoader

    kind, path, warm = spec["kind"], spec["path"], spec["warm"]
    if kind in ("dl-map", "dl-map-batched", "dl-map-packed", "dl-imagefolder"):
        collate = None
        if kind == "dl-map":
            import dspack.torch as dt
            ds = dt.MapDataset(path)  # one ds[i] after another in each worker
        elif kind == "dl-map-batched":
            import dspack.torch as dt
            ds = dt.MapDataset(path, batch_reads=True)  # a batch: one read_batch in the worker
        elif kind == "dl-map-packed":
            import dspack.torch as dt
            ds = dt.MapDataset(path, packed=True)  # a batch: one tensor per field, via shm
            collate = dt.packed_collate
        else:
            import torchvision

            def raw(p):
                with open(p, "rb") as f:
                    return f.read()
            ds = torchvision.datasets.ImageFolder(path, loader=raw)
        # default_collate: the batches, bytes and all, reach this process as a training loop's do
        loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                            prefetch_factor=PREFETCH, persistent_workers=True, collate_fn=collate)
        epochs = 2 if warm else 1
        for e in range(epochs):
            c0, w0, t0 = self_cpu(), None, time.perf_counter()
            it = iter(loader)
            pids = [w.pid for w in it._workers]
            if e == 1:
                w0 = {p: proc_cpu(p) for p in pids}
            n = sum(len(b[0]) if isinstance(b, list) else len(b["__key__"]) for b in it)
            seconds = time.perf_counter() - t0
            cpu = self_cpu() - c0 + sum(proc_cpu(p) - (w0[p] if w0 else 0) for p in pids)
        return {"seconds": seconds, "samples": n, "cpu": cpu}
    import dspack
    import dspack.torch as dt
    if kind == "thread":
        loader = dt.ThreadLoader(path, batch_size=BATCH, threads=WORKERS, prefetch=PREFETCH,
                                 shuffle=True)
        for e in range(2 if warm else 1):
            loader.set_epoch(e)
            c0, t0 = self_cpu(), time.perf_counter()
            n = sum(len(b["__key__"]) for b in loader)
            seconds, cpu = time.perf_counter() - t0, self_cpu() - c0
        return {"seconds": seconds, "samples": n, "cpu": cpu}
    if kind == "read_batch":  # T4: read_batch alone, from WORKERS threads, shuffled batches
        import concurrent.futures

        import numpy as np
        ds = dspack.open(path)
        for e in range(2 if warm else 1):
            order = np.random.default_rng(e).permutation(len(ds)).tolist()
            batches = [order[i:i + BATCH] for i in range(0, len(order), BATCH)]
            c0, t0 = self_cpu(), time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
                copy, packed = spec.get("copy", True), spec.get("packed", False)
                n = sum(len(b["__key__"]) if packed else len(b) for b in pool.map(
                    lambda b: ds.read_batch(b, BATCH, copy, packed=packed), batches))
            seconds, cpu = time.perf_counter() - t0, self_cpu() - c0
        return {"seconds": seconds, "samples": n, "cpu": cpu}
    raise SystemExit(f"unknown child kind {kind}")


# --- the parent -----------------------------------------------------------------------------------
def sh(*args, **kw):
    return subprocess.run([str(a) for a in args], check=True, **kw)


def drop():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def measure(kind, path, warm, **extra):
    if not warm:
        drop()
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(
        dict(kind=kind, path=str(path), warm=warm, **extra))], check=True, capture_output=True,
        text=True, env=dict(os.environ, PYTHONPATH=os.environ["DSPACK_PYTHONPATH"]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def replay(path, warm, loader="model"):
    """dsbench replay with the same job, by the C++ model or (loader="torch") a real DataLoader;
    its last epoch."""
    args = [os.environ["DSBENCH"], "replay", path, "--workers", WORKERS, "--batch", BATCH,
            "--prefetch", PREFETCH, "--epochs", 2 if warm else 1, "--loader", loader,
            "--cache", "warm" if warm else "cold", "--output-format", "json"]
    if not warm:
        args.append("--drop-caches")
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit(f"dsbench replay failed: {out.stderr}")
    e = json.loads(out.stdout)["replay"]["epochs"][-1]
    return {"seconds": e["seconds"], "samples": e["samples"], "cpu": e["cpu_seconds"]}


def median_rate(runs):
    return statistics.median(r["samples"] / r["seconds"] for r in runs)


def main():
    n, rounds = int(sys.argv[1]), int(sys.argv[2])
    w, dspack_bin, dsbench = os.environ["W"], os.environ["DSPACK"], os.environ["DSBENCH"]
    tree = f"{w}/imagenet-{n}"
    only = os.environ.get("ONLY", "T1,T2,T3,T4,T5").split(",")  # e.g. ONLY=T2,T4
    ds = {}
    for layout in ("native", "lmdb", "wds", "tfrecord", "recordio") if "T5" in only else ["native"]:
        ds[layout] = f"{w}/torch-{layout}-{n}"
        if not os.path.exists(ds[layout] + ".done"):
            sh(dspack_bin, "convert", tree, ds[layout], "--format", layout, "--label-from-dir",
               "--force", "-q")
            open(ds[layout] + ".done", "w").close()
    results = {}

    def run(name, fn):
        if name.split()[0].rstrip("'") in only:
            results.setdefault(name, []).append(fn())

    for _ in range(rounds):
        run("T1 map-native", lambda: measure("dl-map", ds["native"], False))
        run("T1 imagefolder", lambda: measure("dl-imagefolder", tree, False))
        run("T1 map-native-batched", lambda: measure("dl-map-batched", ds["native"], False))
        run("T1 map-native-packed", lambda: measure("dl-map-packed", ds["native"], False))
        run("T3 thread", lambda: measure("thread", ds["native"], True))
        run("T3 dataloader", lambda: measure("dl-map", ds["native"], True))
        run("T4 read_batch", lambda: measure("read_batch", ds["native"], True))
        run("T4 read_batch zero-copy", lambda: measure("read_batch", ds["native"], True,
                                                       copy=False))
        run("T4 read_batch packed", lambda: measure("read_batch", ds["native"], True,
                                                    packed=True))
        run("T4 replay", lambda: replay(ds["native"], True))
        for layout, path in list(ds.items()) + [("tree", tree)]:
            run(f"T5 model {layout}", lambda path=path: replay(path, False))
            run(f"T5 torch {layout}", lambda path=path: replay(path, False, "torch"))
    # T2: both through one slow file system mount each, cold; T2r: mounts that delay every read
    # by 1 ms as well (an NFS whose reads are round trips too)
    mnt = {}
    procs = []
    try:
        for name, src, extra in (("native", ds["native"], []), ("tree", tree, []),
                                 ("native-rl", ds["native"], ["--read-latency", "1ms"]),
                                 ("tree-rl", tree, ["--read-latency", "1ms"])):
            if name.endswith("-rl") and "T2r" not in only:
                continue
            mnt[name] = f"{w}/mnt-torch-{name}"
            os.makedirs(mnt[name], exist_ok=True)
            procs.append(subprocess.Popen([dsbench, "slowfs", src, mnt[name], "--meta-latency",
                                           "1ms", *extra], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            for _ in range(200):
                if os.path.ismount(mnt[name]):
                    break
                time.sleep(0.05)
        for _ in range(rounds):
            run("T2 map-native", lambda: measure("dl-map", mnt["native"], False))
            run("T2 imagefolder", lambda: measure("dl-imagefolder", mnt["tree"], False))
            run("T2 map-native-batched", lambda: measure("dl-map-batched", mnt["native"], False))
            run("T2 map-native-packed", lambda: measure("dl-map-packed", mnt["native"], False))
            run("T2 thread-native", lambda: measure("thread", mnt["native"], False))
            for kind in ("dl-map", "dl-map-batched", "dl-map-packed", "thread"):
                run(f"T2r {kind}", lambda kind=kind: measure(kind, mnt["native-rl"], False))
            run("T2r imagefolder", lambda: measure("dl-imagefolder", mnt["tree-rl"], False))
    finally:
        for p in procs:
            p.send_signal(2)
            p.wait()

    rate = {k: median_rate(v) for k, v in results.items()}
    print(f"dspack Python package vs PyTorch loaders: imagenet-like, {n} samples, batch {BATCH}, "
          f"{WORKERS} workers/threads, medians of {rounds}")
    for k in sorted(rate):
        cpu = [r["cpu"] / r["samples"] for r in results[k]]
        extra = f", {statistics.median(cpu) * 1e6:.0f} CPU-us/sample" if cpu else ""
        print(f"  {k:<26} {rate[k]:8.0f} samples/s{extra}")

    def ratio(a, b):
        return rate[a] / rate[b]

    def line(label, a, b, goal=""):
        if a in rate and b in rate:
            print(f"{label:<62} {ratio(a, b):6.2f}x  {goal}")
    line("T1 local, cold: MapDataset(native) / ImageFolder", "T1 map-native", "T1 imagefolder",
         "(report)")
    line("T1 local, cold: MapDataset(batch_reads=True) / ImageFolder", "T1 map-native-batched",
         "T1 imagefolder")
    line("T1 local, cold: MapDataset(packed=True) / ImageFolder", "T1 map-native-packed",
         "T1 imagefolder")
    line("T2 slowfs 1ms, cold: MapDataset(native) / ImageFolder", "T2 map-native",
         "T2 imagefolder", "(goal >= 10x)")
    line("T2 slowfs 1ms, cold: MapDataset(batch_reads=True) / ImageFolder",
         "T2 map-native-batched", "T2 imagefolder")
    line("T2 slowfs 1ms, cold: MapDataset(packed=True) / ImageFolder", "T2 map-native-packed",
         "T2 imagefolder", "(goal >= 10x)")
    line("T2' slowfs 1ms, cold: ThreadLoader(native) / ImageFolder", "T2 thread-native",
         "T2 imagefolder")
    for kind, label in (("dl-map", "MapDataset"), ("dl-map-batched", "MapDataset(batch_reads)"),
                        ("dl-map-packed", "MapDataset(packed)"), ("thread", "ThreadLoader")):
        line(f"T2r slowfs 1ms + 1ms reads, cold: {label} / ImageFolder", f"T2r {kind}",
             "T2r imagefolder")
    line("T3 warm: ThreadLoader / DataLoader samples/s", "T3 thread", "T3 dataloader",
         "(goal >= 1.5x)")
    if "T3 thread" in results:
        cpu = {k: statistics.median(r["cpu"] / r["samples"] for r in results[k])
               for k in ("T3 thread", "T3 dataloader")}
        print(f"{'T3 warm: CPU per sample, ThreadLoader / DataLoader':<62} "
              f"{cpu['T3 thread'] / cpu['T3 dataloader']:6.2f}x  (goal <= 0.7x)")
    line("T4 warm: read_batch / dsbench replay", "T4 read_batch", "T4 replay", "(goal >= 0.5x)")
    line("T4 warm: read_batch(copy=False) / dsbench replay", "T4 read_batch zero-copy",
         "T4 replay")
    line("T4 warm: read_batch(packed=True) / dsbench replay", "T4 read_batch packed",
         "T4 replay", "(goal >= 0.5x)")
    for layout in list(ds) + ["tree"]:
        line(f"T5 cold, {layout}: model (dsbench replay) / real DataLoader",
             f"T5 model {layout}", f"T5 torch {layout}")
    with open(f"{w}/torch-loader-results.json", "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(json.loads(sys.argv[2]))))
    else:
        main()
