"""Reads the "NAME seconds max_rss_kb" lines written by tools/peers/lib.sh's run(), and the
`dsbench replay --output-format json` runs the peer scripts keep."""
import json
import statistics


def load(path):
    """Returns ({name: median seconds}, {name: peak RSS in KiB}).

    /usr/bin/time reports 10 ms steps, so a median below that is reported as 0.01 s (only tiny
    trees get there; rates computed from it are then lower bounds)."""
    runs = {}
    for line in open(path):
        name, secs, rss = line.split()
        runs.setdefault(name, []).append((float(secs), int(rss)))
    med = {k: max(0.01, statistics.median(s for s, _ in v)) for k, v in runs.items()}
    rss = {k: max(r for _, r in v) for k, v in runs.items()}
    return med, rss


def replay_table(work, rounds, loaders, tag, title, bill):
    """Prints the median samples/s of each replay in `loaders` ((name, label), the first the
    baseline) from work/replay-NAME-TAGr.json, r = 1..rounds, with its ratio to the baseline
    and bill(run) (the text of the last run's bill). Returns {name: median samples/s}."""
    got = {}
    for name, _ in loaders:
        runs = [json.load(open(f"{work}/replay-{name}-{tag}{r}.json"))["replay"]
                for r in range(1, rounds + 1)]
        got[name] = (statistics.median(run["epochs"][0]["samples_per_sec"] for run in runs), runs[-1])
    base = got[loaders[0][0]][0]
    print(title)
    for name, label in loaders:
        sps, run = got[name]
        print(f"   {label:48} {sps:7.0f} samples/s {sps / base:5.1f}x  {bill(run)}")
    return {name: sps for name, (sps, _) in got.items()}
