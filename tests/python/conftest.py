"""Fixtures for the dspack Python package's tests: real datasets written by the real CLI.

Environment (set by ctest, tests/CMakeLists.txt): DSPACK, DSSYNC (the binaries), PYTHONPATH (the
build tree's python/ folder, holding the dspack package and its extension module).
"""

import os
import pathlib
import subprocess

import pytest

LAYOUTS = ["native", "lmdb", "wds", "tfrecord", "recordio"]


def run(*args, check=True, **kw):
    return subprocess.run([str(a) for a in args], check=check, capture_output=True, text=True, **kw)


@pytest.fixture(scope="session")
def dspack_bin():
    return os.environ["DSPACK"]


@pytest.fixture(scope="session")
def dssync_bin():
    return os.environ["DSSYNC"]


@pytest.fixture(scope="session")
def data(tmp_path_factory, dspack_bin):
    """A synthetic image tree (class folders, 300 samples), its zip, and the tree converted with
    --label-from-dir into every layout (sharded ones in ~2 MiB shards), all with the raw schema
    (the source's names, JPEG and cls, in every layout), and "tfrecord-imagenet": tfrecord with
    the default imagenet schema (docs/formats/schema.md)."""
    root = tmp_path_factory.mktemp("data")
    tree = root / "tree"
    run(dspack_bin, "synth", "imagenet-like", tree, "--samples", "300", "--seed", "7", "-q")
    out = {"tree": tree}
    run("zip", "-qr", root / "tree.zip", ".", cwd=tree)
    out["zip"] = root / "tree.zip"
    for layout in LAYOUTS:
        shard = [] if layout == "lmdb" else ["--shard-size", "2MiB"]
        run(dspack_bin, "convert", tree, root / layout, "--format", layout, "--label-from-dir",
            "--schema", "raw", "-q", *shard)
        out[layout] = root / layout
    run(dspack_bin, "convert", tree, root / "tfrecord-imagenet", "--format", "tfrecord",
        "--label-from-dir", "-q")
    out["tfrecord-imagenet"] = root / "tfrecord-imagenet"
    return out


@pytest.fixture(scope="session")
def tiny(tmp_path_factory, dspack_bin):
    """301 small samples (an indivisible count) in ~40 native shards, labelled."""
    root = tmp_path_factory.mktemp("tiny")
    run(dspack_bin, "synth", "tiny-files", root / "tree", "--samples", "301", "--seed", "3", "-q")
    run(dspack_bin, "convert", root / "tree", root / "native", "--label-from-dir", "-q",
        "--shard-size", "32KiB")
    return root / "native"


def files_of(tree):
    """{relative path: bytes} of every file under tree."""
    tree = pathlib.Path(tree)
    return {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*") if p.is_file()}
