"""`dsbench watch` over a real DataLoader with workers: the workers are found, dspack.torch's
epoch_marker marks the epochs, the first epoch reads cold through the slow file system and the
second warm, and the IO verdicts name the mount."""

import json
import os
import subprocess
import sys
import time

import pytest

DSBENCH = os.environ["DSBENCH"]

LOADER = r"""
import sys, torch
import dspack.torch as dt
ds = dt.MapDataset(sys.argv[1])
loader = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, collate_fn=list,
                                     persistent_workers=True)
for epoch in range(2):
    for batch in dt.epoch_marker(loader, epoch, count=len):
        pass
"""


@pytest.fixture
def slow_mount(data, tmp_path):
    """The native dataset behind `dsbench slowfs` at 1 ms a metadata op and 5 ms a READ."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no FUSE: no slow file system")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    fs = subprocess.Popen([DSBENCH, "slowfs", str(data["native"]), str(mnt), "--meta-latency",
                           "1ms", "--read-latency", "5ms"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.ismount(mnt):
            break
        time.sleep(0.05)
    assert os.path.ismount(mnt), fs.stdout.read()
    yield mnt
    fs.send_signal(2)
    fs.wait(timeout=30)


def test_watch_a_dataloader_through_the_slow_file_system(slow_mount, tmp_path):
    script = tmp_path / "loader.py"
    script.write_text(LOADER)
    out = tmp_path / "report.json"
    run = subprocess.run([DSBENCH, "watch", "--interval", "0.2s", "--json", "--output", str(out),
                          "--log", str(tmp_path / "log.jsonl"), "--", sys.executable,
                          str(script), str(slow_mount)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    r = json.loads(out.read_text())
    assert r["max_processes"] >= 3, r["processes"]  # the loader and its 2 workers
    epochs = r["epochs"]
    assert [e["epoch"] for e in epochs] == [0, 1]
    for e in epochs:
        assert e["samples"] == 300 and e["markers"] == 1 and 0 <= e["data_wait_share"] <= 1, e
    assert epochs[0]["page_cache_at_start"] < 0.25, epochs  # cold: a fresh mount (to 50 ms)
    assert epochs[1]["page_cache_at_start"] > 0.9, epochs   # warm: the first epoch's pages
    mount = f"{slow_mount} (fuse.dsbench-slowfs)"
    assert mount in r["mounts"], r["mounts"]
    kinds = {v["kind"]: v for v in r["verdicts"]}
    assert "io.cold_first_epoch" in kinds, r["verdicts"]
    assert mount in kinds["io.cold_first_epoch"]["text"]
    assert "io.data_wait" in kinds and mount in kinds["io.data_wait"]["text"], r["verdicts"]
    assert "memory.leak" not in kinds, r["verdicts"]
    log = [json.loads(line) for line in open(tmp_path / "log.jsonl")]
    assert sum(1 for x in log if x["type"] == "epoch_marker") == 4  # start, end per epoch


def test_epoch_marker_is_free_without_watch(monkeypatch):
    import dspack.torch as dt
    monkeypatch.delenv("DSPACK_WATCH_EPOCHS", raising=False)
    assert list(dt.epoch_marker(range(5), 0)) == [0, 1, 2, 3, 4]
    with pytest.raises(TypeError):
        list(dt.epoch_marker(epoch=0))


def test_thread_loader_marks_its_epochs(data, tmp_path, monkeypatch):
    import dspack.torch as dt
    marks = tmp_path / "epochs"
    marks.write_text("")
    monkeypatch.setenv("DSPACK_WATCH_EPOCHS", str(marks))
    loader = dt.ThreadLoader(data["native"], batch_size=50, threads=2)
    for _ in range(2):
        n = sum(len(b["cls"]) for b in loader)
        assert n == 300
    lines = [json.loads(line) for line in marks.read_text().splitlines()]
    assert [(x["event"], x["epoch"]) for x in lines] == [("start", 0), ("end", 0),
                                                         ("start", 1), ("end", 1)]
    assert lines[1]["samples"] == 300 and lines[1]["data_wait_s"] >= 0


def downgrade(path, *args, batches=8):
    run = subprocess.run([DSBENCH, "watch", "--downgrade", str(path), "--workers", "2",
                          "--batch", "16", "--batches", str(batches), "--json", *args],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_downgrade_names_storage_behind_the_slow_file_system(slow_mount, tmp_path):
    r = downgrade(slow_mount)
    assert set(r["runs"]) == {"configured", "memory", "memory_w0", "workers0"}, r["runs"]
    assert r["largest"] == "storage", r
    shares = {p["name"]: p["share"] for p in r["attribution"]}
    assert shares["storage"] > 0.5 and sum(shares.values()) <= 1.0001, shares
    assert any("not staged" in n for n in r["notes"])  # a FUSE mount, no --stage-dir
    # Staged with dssync: the local copy's run, the remote-access share, the advice to stage.
    stage = tmp_path / "stage"
    r = downgrade(slow_mount, "--stage-dir", str(stage))
    assert "staged" in r["runs"] and not stage.exists(), r["runs"]
    shares = {p["name"]: p["share"] for p in r["attribution"]}
    assert shares["remote_access"] > 0.5, shares
    assert any(a.startswith("stage it") for a in r["advice"]), r["advice"]


def test_downgrade_names_the_loader_on_a_local_warm_dataset(data):
    r = downgrade(data["native"], "--warm", batches=16)
    assert r["largest"] in ("worker_ipc", "decode_transform"), r
    assert r["runs"]["memory"]["samples"] == 16 * 16


def test_downgrade_bad_input(data, tmp_path):
    missing = subprocess.run([DSBENCH, "watch", "--downgrade", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "No such file" in missing.stderr, missing.stderr
    both = subprocess.run([DSBENCH, "watch", "--downgrade", str(data["native"]), "--", "true"],
                          capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "give no command" in both.stderr
    bad = subprocess.run([DSBENCH, "watch", "--downgrade", str(data["native"]), "--transform",
                          "blur"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--transform blur" in bad.stderr
