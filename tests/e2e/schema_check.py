#!/usr/bin/python3
"""Reads dspack's interop layouts written with --schema imagenet as their loaders do, with code
dspack did not write, and checks every sample against the source tree SRC (CLASS/NAME.EXT):

  tfrecord DIR SRC BASE PB_DIR  tf.train.Example parsed by protoc's generated code (PB_DIR holds
                                example_pb2, from tests/fixtures/proto/example.proto); the
                                ImageNet feature spec: image/encoded bytes, image/class/label
                                one int64, image/format, image/filename
  wds DIR SRC BASE              webdataset's grouping rule (base_plus_ext + group_by_keys):
                                one sample per key, suffixes jpg/png + cls (ASCII integer)
  recordio DIR SRC BASE         MXNet's recordio.unpack: IRHeader 'IfQQ' (flag, label, id, id2),
                                one record per sample, .idx keys = ids
  lmdb DIR SRC BASE             the PyTorch ImageNet-LMDB recipe (ImageFolderLMDB): pickled
                                __len__ and __keys__, pickle.loads(value) = (image, label), fed
                                through torch's DataLoader with 2 worker processes
  caffe DIR SRC BASE PB_DIR     Caffe's Datum (caffe_pb2 from tests/fixtures/proto/
                                caffe_datum.proto) under each key, as convert_imageset --encoded
                                writes it: data, label, encoded = true

The label of CLASS is BASE + its index among the sorted class folders. Images are decoded with
PIL and must equal the source file's bytes.
"""
import io
import os
import pickle
import re
import struct
import sys
import tarfile

from PIL import Image


def source(src):
    classes = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    files = {}
    for i, c in enumerate(classes):
        for n in os.listdir(os.path.join(src, c)):
            with open(os.path.join(src, c, n), "rb") as f:
                files[f"{c}/{n}"] = (f.read(), i)
    return files


def check_image(data, want, what):
    assert data == want, f"{what}: image bytes differ from the source file"
    Image.open(io.BytesIO(data)).load()  # decodes


def tfrecord_records(path):
    with open(path, "rb") as f:
        buf = f.read()
    off = 0
    while off < len(buf):
        (n,) = struct.unpack_from("<Q", buf, off)
        yield buf[off + 12 : off + 12 + n]
        off += 16 + n


def check_tfrecord(d, src, base, pb_dir):
    sys.path.insert(0, pb_dir)
    import example_pb2  # noqa: E402

    files, seen = source(src), 0
    for shard in sorted(x for x in os.listdir(d) if x.endswith(".tfrecord")):
        for rec in tfrecord_records(os.path.join(d, shard)):
            ex = example_pb2.Example()
            ex.ParseFromString(rec)
            feat = ex.features.feature
            # The ImageNet feature spec (FixedLenFeature: exactly one value of the type).
            assert feat["image/encoded"].WhichOneof("kind") == "bytes_list"
            assert len(feat["image/encoded"].bytes_list.value) == 1
            assert feat["image/class/label"].WhichOneof("kind") == "int64_list", feat["image/class/label"]
            assert len(feat["image/class/label"].int64_list.value) == 1
            key = feat["__key__"].bytes_list.value[0].decode()
            name = feat["image/filename"].bytes_list.value[0].decode()
            cls = key.split("/")[0]
            data, label = files[f"{cls}/{name}"]
            check_image(feat["image/encoded"].bytes_list.value[0], data, key)
            got = feat["image/class/label"].int64_list.value[0]
            assert got == label + base, f"{key}: label {got}, want {label + base}"
            fmt = feat["image/format"].bytes_list.value[0].decode()
            want_fmt = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png"}[name.rsplit(".", 1)[1].lower()]
            assert fmt == want_fmt, f"{key}: image/format {fmt}, want {want_fmt}"
            seen += 1
    assert seen == len(files), f"{seen} Examples for {len(files)} source files"
    return seen


# webdataset's rule (webdataset/tariterators.py base_plus_ext, group_by_keys): a member name splits
# at the first dot of its last component; a name without one (our __dspack_index__) is skipped.
def base_plus_ext(path):
    m = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", path)
    return (m.group(1), m.group(2)) if m else (None, None)


def check_wds(d, src, base):
    files = source(src)
    by_name = {os.path.splitext(k)[0]: v for k, v in files.items()}
    samples = []
    for shard in sorted(x for x in os.listdir(d) if x.endswith(".tar")):
        with tarfile.open(os.path.join(d, shard)) as t:
            current = None
            for m in t.getmembers():
                prefix, suffix = base_plus_ext(m.name)
                if prefix is None:
                    continue
                if current is None or current["__key__"] != prefix:
                    current = {"__key__": prefix}
                    samples.append(current)
                assert suffix not in current, f"{m.name}: suffix twice in one sample"
                current[suffix] = t.extractfile(m).read()
    for s in samples:
        key = s["__key__"]
        exts = sorted(k for k in s if k != "__key__")
        assert exts in (["cls", "jpg"], ["cls", "png"]), f"{key}: members {exts}"
        data, label = by_name[key]
        check_image(s[exts[1]], data, key)
        assert s["cls"] == str(label + base).encode(), f"{key}: cls {s['cls']!r}"
    assert len(samples) == len(files), f"{len(samples)} samples for {len(files)} files"
    return len(samples)


# MXNet's recordio: kMagic framing (dmlc-core), IRHeader = struct 'IfQQ' (recordio.py unpack).
def rec_records(buf):
    off = 0
    while off < len(buf):
        magic, lrec = struct.unpack_from("<II", buf, off)
        assert magic == 0xCED7230A, f"offset {off}: bad magic"
        n, cflag = lrec & ((1 << 29) - 1), lrec >> 29
        assert cflag == 0, "a split record (no image here holds the magic)"
        yield off, buf[off + 8 : off + 8 + n]
        off += 8 + n + (-n % 4)


def check_recordio(d, src, base):
    files = source(src)
    lst_paths, seen = {}, 0
    for shard in sorted(x for x in os.listdir(d) if x.endswith(".rec")):
        stem = os.path.join(d, shard[: -len(".rec")])
        idx = dict(map(int, line.split("\t")) for line in open(stem + ".idx"))
        for line in open(stem + ".lst"):
            i, label, path = line.rstrip("\n").split("\t")
            lst_paths[int(i)] = (float(label), path)
        with open(os.path.join(d, shard), "rb") as f:
            buf = f.read()
        for off, rec in rec_records(buf):
            flag, label, rid, rid2 = struct.unpack_from("IfQQ", rec, 0)
            assert flag == 0 and rid2 == 0, f"record {rid}: flag {flag} id2 {rid2}"
            assert idx[rid] == off, f"record {rid}: .idx says {idx.get(rid)}, it is at {off}"
            lst_label, path = lst_paths[rid]
            data, want = files[path]
            assert label == want + base == lst_label, f"{path}: label {label}, want {want + base}"
            check_image(rec[24:], data, path)
            seen += 1
    assert seen == len(files), f"{seen} records for {len(files)} files"
    return seen


# The recipe (pytorch ImageNet-LMDB, e.g. Efficient-PyTorch's folder2lmdb.py), with pickle as its
# serializer: everything it needs is in the keys it reads.
class ImageFolderLMDB:
    def __init__(self, db_path):
        import lmdb

        self.db_path = db_path
        env = lmdb.open(db_path, subdir=os.path.isdir(db_path), readonly=True, lock=False,
                        readahead=False, meminit=False)
        with env.begin(write=False) as txn:
            self.length = pickle.loads(txn.get(b"__len__"))
            self.keys = pickle.loads(txn.get(b"__keys__"))
        env.close()
        self.env = None

    def __getitem__(self, index):
        import lmdb

        if self.env is None:  # opened per worker process, as the recipes do
            self.env = lmdb.open(self.db_path, subdir=os.path.isdir(self.db_path), readonly=True,
                                 lock=False, readahead=False, meminit=False)
        with self.env.begin(write=False) as txn:
            imgbuf, target = pickle.loads(txn.get(self.keys[index]))
            key = txn.get(self.keys[index] + b".__key__").decode()  # dspack's, for the check
        Image.open(io.BytesIO(imgbuf)).convert("RGB")
        return key, imgbuf, target

    def __len__(self):
        return self.length


def source_by_key(src):
    return {os.path.splitext(k)[0]: v for k, v in source(src).items()}


def check_lmdb(d, src, base):
    import torch.utils.data

    files = source_by_key(src)
    ds = ImageFolderLMDB(d)
    assert len(ds) == len(files) == len(ds.keys), (len(ds), len(files))
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2,
                                         collate_fn=lambda b: b)
    seen = 0
    for batch in loader:
        for key, imgbuf, target in batch:
            data, label = files[key]
            assert imgbuf == data, f"{key}: image bytes differ"
            assert target == label + base, f"{key}: label {target}, want {label + base}"
            seen += 1
    assert seen == len(files)
    return seen


def check_caffe(d, src, base, pb_dir):
    import lmdb

    sys.path.insert(0, pb_dir)
    import caffe_datum_pb2  # noqa: E402

    files = source_by_key(src)
    seen = 0
    with lmdb.open(d, readonly=True, lock=False) as env, env.begin() as txn:
        for k, v in txn.cursor():
            if k.startswith(b"__"):
                continue
            index, key = k.decode().split("_", 1)
            assert len(index) == 10 and index.isdigit(), k
            datum = caffe_datum_pb2.Datum.FromString(v)
            assert datum.encoded, f"{key}: encoded is not set"
            data, label = files[key]
            check_image(datum.data, data, key)
            assert datum.label == label + base, f"{key}: label {datum.label}"
            seen += 1
    assert seen == len(files), f"{seen} Datums for {len(files)} files"
    return seen


if __name__ == "__main__":
    kind, d, src, base = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if kind == "tfrecord":
        n = check_tfrecord(d, src, base, sys.argv[5])
    elif kind == "wds":
        n = check_wds(d, src, base)
    elif kind == "lmdb":
        n = check_lmdb(d, src, base)
    elif kind == "caffe":
        n = check_caffe(d, src, base, sys.argv[5])
    else:
        n = check_recordio(d, src, base)
    print(f"{kind}: {n} samples read as their loaders read them")
