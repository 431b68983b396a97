"""dspack.open over every layout, a zip and a tree: byte-exact against `dspack extract`, the
sample dict's shape, batches, zero copy, and every bad input the package documents."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import dspack
from conftest import LAYOUTS, files_of, run


def as_files(ds):
    """The dataset's samples as {path: bytes}, label fields left out (extract leaves them out)."""
    out = {}
    for s in ds.read_batch(range(len(ds))):
        for name, value in s.items():
            if name in ("__key__", ds.label_field):
                continue
            out[s["__key__"] + ("." + name if name else "")] = bytes(value)
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_reads_back_what_extract_restores(data, layout, dspack_bin, tmp_path):
    run(dspack_bin, "extract", data[layout], tmp_path / "x", "-q")
    with dspack.open(data[layout]) as ds:
        assert ds.kind == layout
        assert len(ds) == 300
        assert as_files(ds) == files_of(tmp_path / "x") == files_of(data["tree"])


@pytest.mark.parametrize("source", ["zip", "tree"])
def test_a_zip_and_a_tree_read_as_the_converted_dataset(data, source):
    with dspack.open(data[source]) as ds, dspack.open(data["native"]) as native:
        assert ds.kind == source
        assert as_files(ds) == files_of(data["tree"])
        assert ds.keys() == native.keys()  # the same grouping, in the same order


def test_the_sample_dict(data):
    ds = dspack.open(data["native"])
    s = ds[0]
    assert set(s) == {"__key__", "JPEG", "cls"}
    assert isinstance(s["__key__"], str) and isinstance(s["JPEG"], bytes)
    assert ds.label_field == "cls"
    assert isinstance(s["cls"], int)
    assert ds.classes[s["cls"]] == s["__key__"].split("/")[0]  # the class folder
    assert ds[-1]["__key__"] == ds.keys()[-1]
    assert ds.index_of(ds.keys()[123]) == 123
    with pytest.raises(KeyError, match="no-such-key"):
        ds.index_of("no-such-key")


@pytest.mark.parametrize("layout", LAYOUTS + ["zip", "tree"])
def test_sizes_and_batches(data, layout):
    ds = dspack.open(data[layout])
    sizes = ds.sizes
    assert sizes.dtype == np.uint64 and len(sizes) == len(ds)
    order = [7, 3, 299, 3, 0]
    batch = ds.read_batch(order)
    assert [b["__key__"] for b in batch] == [ds[i]["__key__"] for i in order]
    for i, b in zip(order, batch):
        payload = sum(len(v) for k, v in b.items() if k not in ("__key__", ds.label_field))
        payload += len(str(b[ds.label_field])) if ds.label_field in b else 0  # ASCII digits
        if layout in ("lmdb", "tree"):  # the payload
            assert sizes[i] == payload
        elif layout == "zip":  # compressed sizes: random JPEG-like bytes deflate to a bit more
            assert abs(int(sizes[i]) - payload) <= payload // 100 + 64
        else:  # the record as stored: payload + framing (tar: 512-byte headers and padding)
            assert payload < sizes[i] <= payload + 4 * 1024, (i, payload, sizes[i])
    collated = ds.read_batch(order, collate=True)
    assert collated["__key__"] == [b["__key__"] for b in batch]
    assert collated["JPEG"] == [b["JPEG"] for b in batch]


def test_a_schema_names_the_fields(data):
    """The reader's field names are the schema's: TFRecord's imagenet names, the label an int."""
    with dspack.open(data["tfrecord-imagenet"]) as ds, dspack.open(data["native"]) as native:
        assert ds.label_field == "image/class/label"
        for i in (0, 150, 299):
            s, n = ds[i], native[i]
            assert set(s) == {"__key__", "image/encoded", "image/class/label", "image/format",
                              "image/filename"}
            assert s["image/encoded"] == n["JPEG"] and s["image/class/label"] == n["cls"]
            assert isinstance(s["image/class/label"], int)
            assert s["image/format"] == b"jpeg"
            assert s["image/filename"] == (n["__key__"].split("/")[-1] + ".JPEG").encode()
            assert ds.classes[s["image/class/label"]] == s["__key__"].split("/")[0]


def test_read_batch_keeps_reads_in_flight(data):
    ds = dspack.open(data["native"])
    ds.read_batch(range(300), inflight=16)
    stats = ds.last_batch_stats()
    # Neighbouring samples are one read (formats/batch_read.cc): 300 in a row are a few reads.
    assert 1 <= stats["reads"] < 300, stats
    if stats["engine"] == "io_uring" and stats["reads"] > 1:
        assert stats["peak_inflight"] > 1  # more than one read outstanding at once
    ds.read_batch(range(0, 300, 2), inflight=16)  # every other sample: gaps too wide to join
    apart = ds.last_batch_stats()
    assert apart["reads"] > stats["reads"], (apart, stats)

    try:
        ds.read_batch(range(3), inflight=100000)  # over io_uring's IORING_MAX_ENTRIES
    except ValueError as e:
        assert "inflight=" in str(e) and "iodepth" not in str(e), str(e)


@pytest.mark.parametrize("layout", ["native", "lmdb", "wds", "tree"])
def test_a_packed_batch_holds_the_samples_bytes_in_one_buffer(data, layout):
    ds = dspack.open(data[layout])
    order = [7, 3, 299, 3, 0]  # any order, a repeat
    want = [ds[i] for i in order]
    b = ds.read_batch(order, inflight=4, packed=True)
    del ds  # the buffers outlive the dataset
    assert b["__key__"] == [s["__key__"] for s in want]
    jpeg = b["JPEG"]
    assert isinstance(jpeg, dspack.Packed) and len(jpeg) == len(order)
    assert jpeg.data.dtype == np.uint8 and jpeg.data.flags.writeable  # the caller's alone
    assert jpeg.offsets[0] == 0 and jpeg.offsets[-1] == len(jpeg.data)
    assert [bytes(v) for v in jpeg] == [s["JPEG"] for s in want]
    assert list(jpeg.lengths) == [len(s["JPEG"]) for s in want]
    assert bytes(jpeg[-1]) == want[-1]["JPEG"]
    with pytest.raises(IndexError):
        jpeg[len(order)]
    if layout != "tree":  # a tree has no label field
        assert b["cls"].dtype == np.int64 and list(b["cls"]) == [s["cls"] for s in want]


def test_a_packed_batch_of_samples_with_different_fields(tmp_path, dspack_bin):
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "a.jpg").write_bytes(b"A" * 10)
    (tree / "a.txt").write_bytes(b"caption a")
    (tree / "b.jpg").write_bytes(b"B" * 3)  # no .txt: an empty entry in that field
    (tree / "c.txt").write_bytes(b"")
    ds = dspack.open(tree)
    b = ds.read_batch(range(3), packed=True)
    assert b["__key__"] == ["a", "b", "c"]
    assert [bytes(v) for v in b["jpg"]] == [b"A" * 10, b"B" * 3, b""]
    assert [bytes(v) for v in b["txt"]] == [b"caption a", b"", b""]
    assert ds.read_batch([], packed=True) == {"__key__": []}


def test_zero_copy_arrays_own_their_bytes(data):
    ds = dspack.open(data["wds"])
    a = ds.get(5, copy=False)["JPEG"]
    b = ds.read_batch([5], copy=False)[0]["JPEG"]
    assert isinstance(a, np.ndarray) and a.dtype == np.uint8 and not a.flags.writeable
    want = ds[5]["JPEG"]
    del ds  # the arrays outlive the dataset
    assert a.tobytes() == want and bytes(memoryview(b)) == want


def test_bad_inputs(data, tmp_path, dspack_bin):
    with pytest.raises(FileNotFoundError, match="nope"):
        dspack.open(tmp_path / "nope")
    ds = dspack.open(data["native"])
    with pytest.raises(IndexError, match="out of range"):
        ds[300]
    with pytest.raises(IndexError):
        ds.read_batch([0, 300])
    with pytest.raises(TypeError):
        ds["0"]
    # A half-written dataset (no commit point): the error `dspack verify` gives.
    half = tmp_path / "half"
    shutil.copytree(data["native"], half)
    os.remove(half / "manifest.json")
    verify = run(dspack_bin, "verify", half, check=False)
    assert verify.returncode == 1
    with pytest.raises(dspack.DatasetError) as e:
        dspack.open(half)
    assert str(e.value).split(":")[-1].strip() in verify.stdout
    assert isinstance(e.value, OSError)
    (tmp_path / "plain.txt").write_text("hello")
    with pytest.raises(dspack.DatasetError, match="not a dataset"):
        dspack.open(tmp_path / "plain.txt")
    ds.close()
    with pytest.raises(ValueError, match="closed"):
        ds[0]


def flip_byte_of_sample(ds_dir, i):
    """Flips a byte inside sample i's payload in its shard; returns the sample's key."""
    with dspack.open(ds_dir) as ds:
        key, want = ds[i]["__key__"], ds[i]["JPEG"]
    # The payload is the sample's jpg bytes: find them in a shard and flip one in the middle.
    for f in sorted(pathlib.Path(ds_dir).glob("shard-*.dsr")):
        raw = bytearray(f.read_bytes())
        at = raw.find(want)
        if at >= 0:
            raw[at + len(want) // 2] ^= 0x40
            f.write_bytes(bytes(raw))
            return key, f.name
    raise AssertionError("sample bytes not found")


def test_a_flipped_byte_names_file_offset_and_key(data, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(data["native"], bad)
    key, shard = flip_byte_of_sample(bad, 42)
    ds = dspack.open(bad)
    with pytest.raises(dspack.CorruptSampleError) as e:
        ds[42]
    msg = str(e.value)
    assert shard in msg and key in msg and "offset" in msg
    with pytest.raises(dspack.CorruptSampleError):
        ds.read_batch(range(40, 50))
    assert any(key in p for p in ds.verify())
    assert type(e.value)(msg).args == (msg,)  # rebuilt from one string, as torch re-raises it


_LMDB_MUTANTS = r"""
import json, shutil, sys
import dspack
good, work = sys.argv[1], sys.argv[2]
mutants = [(8209, "=", 0xff), (8218, "=", 0xff)]
mutants += [(off, "^", bit) for off in (144, 148, 4136) for bit in (0x01, 0x80)]
mutants += [(off, "=", 0xff) for off in range(8192, 16384, 64)]
# 500 seeded mutants anywhere in the file (a byte XORed with a non-zero value), as for the CLIs
import os, random
rng = random.Random(15)
size = os.path.getsize(good + "/data.mdb")
mutants += [(rng.randrange(size), "^", rng.randrange(1, 256)) for _ in range(500)]
for off, op, v in mutants:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(good, work)
    with open(work + "/data.mdb", "r+b") as f:
        f.seek(off)
        b = f.read(1)[0]
        f.seek(off)
        f.write(bytes([b ^ v if op == "^" else v]))
    try:
        with dspack.open(work) as ds:
            ds.read_batch(range(len(ds)))
            outcome = {"samples": len(ds), "problems": len(ds.verify())}
    except dspack.DatasetError as e:
        outcome = {"error": str(e)}
    print(json.dumps({"offset": off, **outcome}), flush=True)
"""


def test_a_damaged_lmdb_never_crashes_the_reader(tmp_path, dspack_bin):
    """The LMDB offsets that crashed every reader (issue 15 #3), meta-page flips, 0xff at 128
    offsets on pages 2-3 and 500 seeded mutants anywhere, read in one child process: a signal
    there fails the test, and every mutant is either refused or found by verify."""
    run(dspack_bin, "synth", "tiny-files", tmp_path / "d", "--samples", "6", "--seed", "1", "-q")
    run(dspack_bin, "convert", tmp_path / "d", tmp_path / "good", "--format", "lmdb", "-q")
    p = subprocess.run([sys.executable, "-c", _LMDB_MUTANTS, str(tmp_path / "good"),
                        str(tmp_path / "bad")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"the reader died ({p.returncode}): {p.stdout[-300:]}{p.stderr}"
    results = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(results) == 2 + 6 + 128 + 500
    for r in results[:8]:
        assert "data.mdb" in r.get("error", ""), r
    assert all("error" in r or r["problems"] > 0 for r in results[8:])


@pytest.mark.parametrize("layout", ["tree", "lmdb", "zip"])
def test_read_batch_survives_threads_that_cannot_start(data, layout):
    """A threaded layout's read_batch under an address-space limit that leaves room for a few
    thread stacks: the batch is read with the threads that did start (it aborted the
    interpreter: terminate called without an active exception)."""
    child = r"""
import resource, sys
import dspack
ds = dspack.open(sys.argv[1])
want = [ds[i] for i in range(64)]  # 64 samples, about 7 MiB: room for them and a few stacks
vm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize")][0] * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (48 << 20), resource.RLIM_INFINITY))
b = ds.read_batch(range(64), inflight=64)
assert b == want
print("read", len(b))
"""
    p = subprocess.run([sys.executable, "-c", child, str(data[layout])], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert p.stdout.strip() == "read 64"


def test_a_zip_name_in_cp437_reads_as_convert_reads_it(tmp_path, dspack_bin):
    """A name without the UTF-8 flag is CP437 (APPNOTE appendix D): dspack.open(zip) gives the key
    convert gives (it gave filename_with_\\udc91o\\udc86 for filename_with_\u00e6o\u00e5)."""
    import zipfile
    z = tmp_path / "cp437.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("c1/filename_with_XoX.jpg", b"jpeg bytes")
        zf.writestr("c1/plain.jpg", b"other")
    raw = z.read_bytes()
    assert raw.count(b"filename_with_XoX") == 2  # local header and central directory
    z.write_bytes(raw.replace(b"filename_with_XoX", b"filename_with_\x91o\x86"))
    assert zipfile.ZipFile(z).namelist()[0] == "c1/filename_with_\u00e6o\u00e5.jpg"
    ds = dspack.open(z)
    run(dspack_bin, "convert", z, tmp_path / "out", "-q")
    want = list(dspack.open(tmp_path / "out").keys())
    assert "c1/filename_with_\u00e6o\u00e5" in want
    assert sorted(ds.keys()) == sorted(want)
    assert ds[ds.index_of("c1/filename_with_\u00e6o\u00e5")]["jpg"] == b"jpeg bytes"


def test_keys_and_class_names_that_are_not_utf8(tmp_path, dspack_bin):
    """index_of takes what keys() gave (TypeError before), and classes decodes a class folder
    named cls\\xff (UnicodeDecodeError before), both as os.fsdecode does."""
    tree = os.path.join(bytes(tmp_path), b"tree")
    os.makedirs(os.path.join(tree, b"cls\xff"))
    os.makedirs(os.path.join(tree, b"plain"))
    with open(os.path.join(tree, b"cls\xff", b"k\xfe.jpg"), "wb") as f:
        f.write(b"odd")
    with open(os.path.join(tree, b"plain", b"a.jpg"), "wb") as f:
        f.write(b"even")
    run(dspack_bin, "convert", tree.decode("utf-8", "surrogateescape"), tmp_path / "out",
        "--label-from-dir", "-q")
    ds = dspack.open(tmp_path / "out")
    assert sorted(ds.classes) == sorted([os.fsdecode(b"cls\xff"), "plain"])
    for i, k in enumerate(ds.keys()):
        assert ds.index_of(k) == i
        assert ds.index_of(os.fsencode(k)) == i
    with pytest.raises(KeyError):
        ds.index_of(b"nope\xff")
    with pytest.raises(TypeError):
        ds.index_of(3)


def test_a_dataset_deleted_or_replaced_under_a_reader(data, tmp_path, dspack_bin):
    d = tmp_path / "ds"
    shutil.copytree(data["native"], d)
    every = [dspack.open(d)[i] for i in range(len(dspack.open(d)))]
    ds = dspack.open(d)
    before = ds[10]
    # Replaced (convert --force writes a new dataset over it): the open reader keeps reading the
    # files it opened (every shard, also those it had not read yet: the epoch went on with
    # OSError before), which still hold the old bytes; a new open sees the new dataset.
    run(dspack_bin, "convert", data["tree"], d, "--force", "--shard-size", "1MiB", "-q")
    assert ds[10] == before
    assert [ds[i] for i in range(len(ds))] == every
    assert "cls" not in dspack.open(d)[10]
    # Deleted: the open reader still reads what it holds open; opening again is FileNotFoundError.
    shutil.rmtree(d)
    assert ds[10] == before
    with pytest.raises(FileNotFoundError):
        dspack.open(d)
    # A tree whose file vanished after the scan: FileNotFoundError naming the file.
    t = tmp_path / "t"
    shutil.copytree(data["tree"], t)
    tree = dspack.open(t)
    name = tree.keys()[3] + ".JPEG"
    os.remove(t / name)
    with pytest.raises(FileNotFoundError, match=name.split("/")[-1]):
        tree[3]


def test_read_batch_releases_the_gil(data):
    """A Python thread makes progress while one long batch reads: it sees the batch's landed
    counter strictly between start and end, which it cannot if the batch held the GIL."""
    ds = dspack.open(data["tree"])  # the tree: an open + read + close per file, the slowest
    indices = list(range(300)) * 20
    start = ds.samples_landed
    seen, ticks, done = set(), [0], threading.Event()

    def watch():
        while not done.is_set():
            ticks[0] += 1
            seen.add(ds.samples_landed - start)

    t = threading.Thread(target=watch)
    t.start()
    ds.read_batch(indices, inflight=4)
    done.set()
    t.join()
    mid = [v for v in seen if 0 < v < len(indices)]
    assert ticks[0] > 0 and mid, f"no progress seen during the batch (seen {sorted(seen)[:5]})"


def test_pickles_by_path_and_reopens_after_fork(data):
    import pickle

    ds = dspack.open(data["lmdb"])
    first = ds[0]
    clone = pickle.loads(pickle.dumps(ds))
    assert clone[0] == first and len(clone) == 300
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reads through the parent's object: it opens its own reader
        ok = ds[0] == first and ds[299] == dspack.open(data["lmdb"])[299]
        os.write(w, b"1" if ok else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(r, 1) == b"1"
    assert ds[1]["__key__"]  # and the parent's still works after the child exited
