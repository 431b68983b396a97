#!/usr/bin/python3
"""The dspack Python package against PyTorch's own loaders (issue 13's T1-T5), side by side in one
run, medians of ROUNDS, on `dspack synth imagenet-like --samples N`.

  T1  DataLoader(num_workers=4, batch 32) over MapDataset(native) vs ImageFolder(tree, raw-bytes
      loader), cold (drop_caches before each run), local disk
  T2  the same through `dsbench slowfs --meta-latency 1ms` (emulated NFS)
  T3  ThreadLoader(threads=4) vs DataLoader(num_workers=4), native, warm: samples/s and
      CPU-seconds per sample (the workers' CPU included: /proc/PID/stat of each live worker)
  T4  Python overhead: warm read_batch from 4 threads vs `dsbench replay` warm, same job
  T5  the C++ model vs the real DataLoader (`dsbench replay --loader model|torch`), every layout
      and the tree, cold

Each measurement runs in a fresh Python process (`--child`), which prints one JSON line; timings
exclude imports and dataset construction (ImageFolder's scan, dspack.open), as a training job's
epoch would. Usage (root: drop_caches, FUSE):
  bench/peers/torch_loader.sh [SAMPLES=5000] [ROUNDS=3]
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
    if kind in ("dl-map", "dl-imagefolder"):
        if kind == "dl-map":
            import dspack.torch as dt
            ds = dt.MapDataset(path)
        else:
            import torchvision

            def raw(p):
                with open(p, "rb") as f:
                    return f.read()
            ds = torchvision.datasets.ImageFolder(path, loader=raw)
        # default_collate: the batches, bytes and all, reach this process as a training loop's do
        loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                            prefetch_factor=PREFETCH, persistent_workers=True)
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
                copy = spec.get("copy", True)
                n = sum(len(b) for b in pool.map(lambda b: ds.read_batch(b, BATCH, copy),
                                                 batches))
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
    ds = {}
    for layout in ("native", "lmdb", "wds", "tfrecord", "recordio"):
        ds[layout] = f"{w}/torch-{layout}-{n}"
        if not os.path.exists(ds[layout] + ".done"):
            sh(dspack_bin, "convert", tree, ds[layout], "--format", layout, "--label-from-dir",
               "--force", "-q")
            open(ds[layout] + ".done", "w").close()
    results = {}

    def run(name, fn):
        results.setdefault(name, []).append(fn())

    for _ in range(rounds):
        run("T1 map-native", lambda: measure("dl-map", ds["native"], False))
        run("T1 imagefolder", lambda: measure("dl-imagefolder", tree, False))
        run("T3 thread", lambda: measure("thread", ds["native"], True))
        run("T3 dataloader", lambda: measure("dl-map", ds["native"], True))
        run("T4 read_batch", lambda: measure("read_batch", ds["native"], True))
        run("T4 read_batch zero-copy", lambda: measure("read_batch", ds["native"], True,
                                                       copy=False))
        run("T4 replay", lambda: replay(ds["native"], True))
        for layout, path in list(ds.items()) + [("tree", tree)]:
            run(f"T5 model {layout}", lambda path=path: replay(path, False))
            run(f"T5 torch {layout}", lambda path=path: replay(path, False, "torch"))
    # T2: both through one slow file system mount each, cold
    mnt = {}
    procs = []
    try:
        for name, src in (("native", ds["native"]), ("tree", tree)):
            mnt[name] = f"{w}/mnt-torch-{name}"
            os.makedirs(mnt[name], exist_ok=True)
            procs.append(subprocess.Popen([dsbench, "slowfs", src, mnt[name], "--meta-latency",
                                           "1ms"], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            for _ in range(200):
                if os.path.ismount(mnt[name]):
                    break
                time.sleep(0.05)
        for _ in range(rounds):
            run("T2 map-native", lambda: measure("dl-map", mnt["native"], False))
            run("T2 imagefolder", lambda: measure("dl-imagefolder", mnt["tree"], False))
            run("T2 thread-native", lambda: measure("thread", mnt["native"], False))
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
        print(f"  {k:<22} {rate[k]:8.0f} samples/s{extra}")

    def ratio(a, b):
        return rate[a] / rate[b]
    cpu = {k: statistics.median(r["cpu"] / r["samples"] for r in results[k])
           for k in ("T3 thread", "T3 dataloader")}
    print(f"T1 local, cold: MapDataset(native) / ImageFolder       {ratio('T1 map-native', 'T1 imagefolder'):.2f}x  (report)")
    print(f"T2 slowfs 1ms, cold: MapDataset(native) / ImageFolder  {ratio('T2 map-native', 'T2 imagefolder'):.2f}x  (goal >= 10x)")
    print(f"T2' slowfs 1ms, cold: ThreadLoader(native) / ImageFolder DataLoader  {ratio('T2 thread-native', 'T2 imagefolder'):.2f}x")
    print(f"T3 warm: ThreadLoader / DataLoader samples/s           {ratio('T3 thread', 'T3 dataloader'):.2f}x  (goal >= 1.5x)")
    print(f"T3 warm: CPU per sample, ThreadLoader / DataLoader     {cpu['T3 thread'] / cpu['T3 dataloader']:.2f}x  (goal <= 0.7x)")
    print(f"T4 warm: read_batch / dsbench replay                   {ratio('T4 read_batch', 'T4 replay'):.2f}x  (goal >= 0.5x)")
    print(f"T4 warm: read_batch(copy=False) / dsbench replay       {ratio('T4 read_batch zero-copy', 'T4 replay'):.2f}x")
    for layout in list(ds) + ["tree"]:
        print(f"T5 cold, {layout:<9}: model (dsbench replay) / real DataLoader  "
              f"{ratio(f'T5 model {layout}', f'T5 torch {layout}'):.2f}x")
    with open(f"{w}/torch-loader-results.json", "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(json.loads(sys.argv[2]))))
    else:
        main()
