"""The training loop of python/examples/train.py (shown in README.md and docs/python.md) runs on
real JPEGs (made with PIL), decoded by dspack.torch.decode_image, with both loaders."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import dspack.torch as dt
from conftest import run

EXAMPLE = pathlib.Path(__file__).parents[2] / "python" / "examples" / "train.py"


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory, dspack_bin):
    from PIL import Image

    root = tmp_path_factory.mktemp("jpegs")
    rng = np.random.default_rng(0)
    for c in range(3):
        for i in range(12):
            (root / "tree" / f"class{c}").mkdir(parents=True, exist_ok=True)
            pixels = rng.integers(0, 256, (24 + i, 40, 3), dtype=np.uint8)
            pixels[..., c] = 255  # each class leans to one colour
            Image.fromarray(pixels).save(root / "tree" / f"class{c}" / f"img{i}.jpeg")
    run(dspack_bin, "convert", root / "tree", root / "ds", "--label-from-dir", "-q")
    return root / "ds"


def test_decode_image(jpegs):
    ds = dt.MapDataset(jpegs, transform=dt.decode_image("jpeg", label="cls", size=(16, 16)))
    image, label = ds[0]
    assert image.shape == (3, 16, 16) and image.dtype == torch.uint8 and label == 0
    plain = dt.MapDataset(jpegs, transform=dt.decode_image("jpeg"))[13]
    assert plain.shape == (3, 25, 40)  # unresized: 24 + 1 rows, 40 columns


@pytest.mark.parametrize("loader", ["dataloader", "thread"])
def test_the_training_loop_runs(jpegs, loader):
    out = subprocess.run([sys.executable, EXAMPLE, jpegs, "--loader", loader, "--epochs", "2"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["epoch 0", "epoch 1"]
    assert all("36 samples" in line for line in lines)
