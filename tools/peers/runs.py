"""Reads the "NAME seconds max_rss_kb" lines written by tools/peers/lib.sh's run()."""
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
