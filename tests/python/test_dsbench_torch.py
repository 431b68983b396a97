"""`dsbench replay --loader torch` and `dsbench compare --loader torch`: the real DataLoader runs
the model's job and reports the same JSON; its errors are one line with the documented exit code."""

import json
import os
import shutil
import subprocess

import pytest

import dspack
from test_read import flip_byte_of_sample

DSBENCH = os.environ["DSBENCH"]


def replay(path, *args, env=None):
    out = subprocess.run([DSBENCH, "replay", str(path), "--output-format", "json", "--workers",
                          "2", *args], capture_output=True, text=True, timeout=600, env=env)
    return out


@pytest.mark.parametrize("source", ["native", "tree", "zip"])
def test_replay_by_a_real_dataloader(data, source):
    model = replay(data[source], "--epochs", "1", "--cache", "warm")
    torch = replay(data[source], "--epochs", "2", "--loader", "torch")
    assert model.returncode == 0 and torch.returncode == 0, torch.stderr
    m, t = json.loads(model.stdout)["replay"], json.loads(torch.stdout)["replay"]
    assert t["loader"] == "torch" and m["loader"] == "model"
    assert set(t) == set(m)  # the same JSON
    assert len(t["epochs"]) == 2
    for e in t["epochs"]:
        assert set(e) == set(m["epochs"][0])
        assert e["samples"] == 300 and e["seconds"] > 0 and e["cpu_seconds"] > 0
        assert e["residency_before"] < 0.05  # cold: evicted by dsbench before each epoch
        if source == "native":  # the label's digits are the model's payload, an int to torch
            assert m["epochs"][0]["bytes"] - 300 * 2 <= e["bytes"] <= m["epochs"][0]["bytes"]
        else:
            assert e["bytes"] == m["epochs"][0]["bytes"]
        assert e["opens"] == (300 if source == "tree" else 0)  # ImageFolder: one open a file


def test_replay_torch_errors(data, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(data["native"], bad)
    key, shard = flip_byte_of_sample(bad, 5)
    out = replay(bad, "--epochs", "1", "--loader", "torch")
    assert out.returncode == 1
    err = out.stderr.strip().splitlines()[-1]
    assert "CorruptSampleError" in err and key in err and shard in err
    no_python = replay(data["native"], "--loader", "torch",
                       env=dict(os.environ, DSPACK_PYTHON="/nonexistent/python3"))
    assert no_python.returncode == 2 and "python3-torch" in no_python.stderr
    refused = replay(data["native"], "--loader", "torch", "--on-error", "skip")
    assert refused.returncode == 2 and "--on-error skip" in refused.stderr


def test_compare_puts_model_and_dataloader_side_by_side(data, tmp_path):
    out = subprocess.run([DSBENCH, "compare", str(data["tree"]), "--work-dir", str(tmp_path / "w"),
                          "--layouts", "dir,native", "--cache", "cold", "--epochs", "1",
                          "--workers", "2", "--loader", "torch"],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    assert "against a real torch DataLoader" in out.stdout
    report = json.loads((tmp_path / "w" / "compare.json").read_text())
    for run in report["compare"]["runs"]:
        t = run["torch"]
        assert t["replay"]["loader"] == "torch" and t["samples_per_sec"] > 0
        assert t["model_vs_torch"] == pytest.approx(run["samples_per_sec"] / t["samples_per_sec"])
        assert t["replay"]["epochs"][0]["samples"] == 300


@pytest.mark.skipif(not os.path.exists("/dev/fuse"), reason="no FUSE: no slow file system")
def test_replay_torch_through_the_slow_file_system(data):
    out = replay(data["native"], "--epochs", "1", "--loader", "torch", "--meta-latency", "1ms",
                 "--max-samples", "100")
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)["replay"]
    assert r["slowfs"]["meta_latency_s"] == pytest.approx(0.001)
    assert any("slow file system" in n for n in r["notes"])
    assert r["epochs"][0]["samples"] == 100  # --max-samples reaches the DataLoader too
