#!/usr/bin/python3
"""layout_readers_selftest.py [--print-examples]: tests layout_readers.py on small files of each
layout, written here by hand from the contract (docs/formats/{tfrecord,recordio,wds,lmdb}.md).
The writers are deliberately minimal: they exist to feed the readers good files and bad ones.
GNU tar, when present, also lists and extracts the hand-made WebDataset shards.
--print-examples prints the worked examples that the format docs quote."""
import io, json, os, shutil, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import layout_readers as lr  # noqa: E402

READER = os.path.join(HERE, "layout_readers.py")
PASSED, FAILED = [], []


def check(name, cond, detail=""):
    (PASSED if cond else FAILED).append(name)
    print(("ok - " if cond else "FAIL - ") + name + ("" if cond else f": {detail}"))


# ---- sample sets -------------------------------------------------------------------------------
M = lr.KMAGIC_LE


def labelled_samples():
    """Each sample: (key, [(field, bytes)]), cls last as --label-from-dir makes it."""
    # kMagic at payload offsets 0 and 8 (record data 24, 32: aligned), 15 (39: unaligned), 20 (the end)
    tricky = M + b"ab\x00\x01" + M + b"xyz" + M + b"t" + M
    return [
        (b"n01/a_1", [(b"JPEG", b"\xff\xd8hello\xff\xd9"), (b"cls", b"0")]),
        (b"n01/a_2", [(b"JPEG", tricky), (b"cls", b"0")]),
        (b"n02/b_1", [(b"JPEG", b""), (b"json", b'{"x": 1}'), (b"cls", b"1")]),
        (b"n02/b_2", [(b"seg.png", b"\x89PNG" + bytes(100)), (b"cls", b"1")]),
    ]


def unlabelled_samples():
    long_key = b"deep/" + b"x" * 120
    return [
        (long_key, [(b"jpg", b"long name via pax")]),
        (b"d/" + b"y" * 94, [(b"jpg", b"exactly 100 bytes of name")]),
        (b"caf\xc3\xa9", [(b"txt", b"utf-8 name")]),
        (b"caf\xe9", [(b"txt", b"latin-1 name")]),
        (b"z/README", [(b"", b"no field")]),
        (b"img/0001", [(b"jpg", os.urandom(3000)), (b"json", b"{}")]),
    ]


def expected_files(samples):
    return {lr.join_key_field(k, f): d for k, fields in samples for f, d in fields}


def chunks(samples, per):
    return [samples[i:i + per] for i in range(0, len(samples), per)]


# ---- minimal writers, straight from the contract -------------------------------------------------
def write_manifest(out, fmt, shard_names, shard_counts, samples, label, **extra):
    shards = []
    for name, n in zip(shard_names, shard_counts):
        data = open(os.path.join(out, name), "rb").read()
        sh = {"name": name, "samples": n, "bytes": len(data)}
        if lr.xxh3_64 is not None:
            sh["xxh3"] = "%016x" % lr.xxh3_64(data)
        shards.append(sh)
    man = {"format": fmt, "version": 1, "samples": len(samples),
           "payload_bytes": sum(len(d) for _, fs in samples for _, d in fs),
           "label_field": "cls" if label else "", "shards": shards, "skipped": [],
           "creation_options": {}}
    man.update(extra)
    if label:
        with open(os.path.join(out, "classes.txt"), "wb") as f:
            f.write(b"n01\nn02\n")
    with open(os.path.join(out, "dspack.json"), "w") as f:
        json.dump(man, f)


def tf_frame(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", lr.masked_crc(n)) + data + struct.pack("<I", lr.masked_crc(data))


def write_tfrecord(out, samples, per=2, label=True):
    os.makedirs(out)
    names = []
    for i, part in enumerate(chunks(samples, per)):
        name, blob, idx = "shard-%06d.tfrecord" % i, b"", b""
        for key, fields in part:
            rec = tf_frame(lr.encode_example(key, fields))
            idx += b"%d %d\n" % (len(blob), len(rec))
            blob += rec
        open(os.path.join(out, name), "wb").write(blob)
        open(os.path.join(out, "shard-%06d.idx" % i), "wb").write(idx)
        names.append(name)
    write_manifest(out, "tfrecord", names, [len(p) for p in chunks(samples, per)], samples, label)


def ir_record(label_text, sid, id2, payload):
    vals = [float(x) for x in label_text.replace(b",", b" ").split()] if label_text else [0.0]
    if len(vals) == 1:
        return struct.pack("<IfQQ", 0, vals[0], sid, id2) + payload
    return struct.pack("<IfQQ", len(vals), 0.0, sid, id2) + struct.pack("<%df" % len(vals), *vals) + payload


def write_recordio(out, samples, per=2, label=True):
    os.makedirs(out)
    names, sid = [], 0
    for i, part in enumerate(chunks(samples, per)):
        blob, idx, lst, n = b"", b"", b"", 0
        for key, fields in part:
            cls = dict(fields).get(b"cls", b"") if label else b""
            data_fields = [(f, d) for f, d in fields if not (label and f == b"cls")]
            for j, (f, d) in enumerate(data_fields):
                idx += b"%d\t%d\n" % (n, len(blob))
                labels = b"\t".join(cls.replace(b",", b" ").split()) or b"0"
                lst += b"%d\t%s\t%s\n" % (n, labels, lr.join_key_field(key, f))
                blob += lr.dmlc_frame(ir_record(cls, sid, j, d))
                n += 1
            sid += 1
        base = os.path.join(out, "shard-%06d" % i)
        for ext, data in ((".rec", blob), (".idx", idx), (".lst", lst)):
            open(base + ext, "wb").write(data)
        names.append("shard-%06d.rec" % i)
    write_manifest(out, "recordio", names, [len(p) for p in chunks(samples, per)], samples, label)


def ustar(name, size, typeflag=b"0"):
    h = bytearray(512)
    h[0:min(len(name), 100)] = name[:100]
    h[100:108], h[108:116], h[116:124] = b"0000644\0", b"0000000\0", b"0000000\0"
    h[124:136], h[136:148] = b"%011o\0" % size, b"%011o\0" % 0
    h[156:157], h[257:265], h[148:156] = typeflag, b"ustar\x0000", b" " * 8
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def pax_record(k, v):
    body = b" " + k + b"=" + v + b"\n"
    n = len(body) + 1
    while len(str(n)) + len(body) != n:
        n = len(str(n)) + len(body)
    return str(n).encode() + body


def tar_member(name, data):
    out = b""
    if len(name) > 100 or any(c >= 0x80 for c in name):
        pax = pax_record(b"path", name)
        out += ustar(b"PaxHeader", len(pax), b"x") + pax + bytes(-len(pax) % 512)
    return out + ustar(name, len(data)) + data + bytes(-len(data) % 512)


def write_wds(out, samples, per=3, label=False, dali=True, order=None):
    os.makedirs(out)
    names = []
    for i, part in enumerate(chunks(samples, per)):
        blob, entries, lines = b"", b"", [b"v1.2 %d" % len(part)]
        for key, fields in part:
            begin, comps = len(blob), []
            for f, d in fields:
                name = lr.join_key_field(key, f)
                m = tar_member(name, d)
                comps.append(b"%s %d %d %s" % (f, len(blob) + len(m) - lr.align_up(len(d), 512), len(d), name))
                blob += m
            entries += struct.pack("<QQ", begin, len(blob))
            lines.append(b" ".join(comps))
        n = len(part)
        h = lr.xxh3_64(entries) if lr.xxh3_64 else 0
        size = lr.align_up(16 * n + 32, 512)
        index = entries + bytes(size - 16 * n - 32) + b"DSPKWIX1" + struct.pack("<QQQ", n, h, 0)
        blob += tar_member(b"__dspack_index__", index) + bytes(1024)
        name = "shard-%06d.tar" % i
        open(os.path.join(out, name), "wb").write(blob)
        if dali:
            open(os.path.join(out, "shard-%06d.idx" % i), "wb").write(b"\n".join(lines) + b"\n")
        names.append(name)
    write_manifest(out, "wds", names, [len(p) for p in chunks(samples, per)], samples, label)


def write_lmdb(out, samples, layout, label=True):
    import lmdb
    os.makedirs(out)
    env = lmdb.open(out, map_size=1 << 24)
    with env.begin(write=True) as txn:
        for s, (key, fields) in enumerate(samples):
            if layout == "field":
                txn.put(b"%010d.__key__" % s, key)
                for f, d in fields:
                    txn.put(b"%010d.%s" % (s, f), d)
            else:
                v = struct.pack("<I", len(key)) + key + struct.pack("<I", len(fields))
                v += b"".join(struct.pack("<I", len(f)) + f + struct.pack("<Q", len(d)) for f, d in fields)
                txn.put(b"%010d" % s, v + b"".join(d for _, d in fields))
        txn.put(b"__len__", b"%d" % len(samples))
        txn.put(b"__meta__", json.dumps({"format": "dspack-lmdb", "version": 1, "layout": layout,
                                         "samples": len(samples), "label_field": "cls" if label else ""}).encode())
    env.close()
    write_manifest(out, "lmdb", [], [], samples, label, lmdb_layout=layout)


# ---- running the reader ------------------------------------------------------------------------
def run(fmt, out, ext):
    shutil.rmtree(ext, ignore_errors=True)
    p = subprocess.run([sys.executable, READER, fmt, out, ext], capture_output=True)
    return p.returncode, p.stdout.decode() + p.stderr.decode("utf-8", "replace")


def tree(root):
    root = os.fsencode(root)
    got = {}
    for r, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(r, f)
            got[os.path.relpath(p, root)] = open(p, "rb").read()
    return got


def good(name, fmt, out, ext, samples):
    code, msg = run(fmt, out, ext)
    check(name, code == 0 and tree(ext) == expected_files(samples), msg)


def bad(name, fmt, out, ext, *words):
    code, msg = run(fmt, out, ext)
    check(name, code == 1 and all(w in msg for w in words) and msg.count("\n") == 1, f"exit {code}: {msg}")


def edit(path, fn):
    data = open(path, "rb").read()
    open(path, "wb").write(fn(data))


def patch(path, off, fn):
    b = bytearray(open(path, "rb").read())
    b[off] = fn(b[off])
    open(path, "wb").write(b)


def copy(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


# ---- the tests ---------------------------------------------------------------------------------
def test_tfrecord(t):
    s = labelled_samples()
    write_tfrecord(f"{t}/tf", s)
    good("tfrecord: two shards read back byte-exact, CRCs and .idx checked", "tfrecord", f"{t}/tf", f"{t}/x", s)
    sh = "shard-000001.tfrecord"
    patch(copy(f"{t}/tf", f"{t}/tf1") + "/" + sh, 40, lambda b: b ^ 1)
    bad("tfrecord: a flipped data byte is rejected", "tfrecord", f"{t}/tf1", f"{t}/x", "data CRC mismatch", sh, "offset 0")
    patch(copy(f"{t}/tf", f"{t}/tf2") + "/" + sh, 2, lambda b: b ^ 0x80)
    bad("tfrecord: a flipped length byte is rejected", "tfrecord", f"{t}/tf2", f"{t}/x", "length CRC mismatch")
    p = copy(f"{t}/tf", f"{t}/tf3") + "/" + sh
    os.truncate(p, os.path.getsize(p) - 3)
    bad("tfrecord: a truncated last record is rejected", "tfrecord", f"{t}/tf3", f"{t}/x", "truncated", sh)
    p = copy(f"{t}/tf", f"{t}/tf4") + "/shard-000000.idx"
    open(p, "ab").write(b"0 1\n")
    bad("tfrecord: an extra .idx line is rejected", "tfrecord", f"{t}/tf4", f"{t}/x", "shard-000000.idx", "line 3")
    # A foreign Example: unknown fields, a group, packed and unpacked int64, floats, no __key__.
    neg = (1 << 64) - 5
    i64 = lr.pb_bytes(0x0A, b"\x01\x96\x01" + lr.pb_len(neg))  # packed: 1, 150, -5
    i64u = b"\x08\x07\x08\x02"  # unpacked: 7, 2
    flt = lr.pb_bytes(0x0A, struct.pack("<2f", 0.5, 0.1))
    entry = lambda n, feat: lr.pb_bytes(0x0A, lr.pb_bytes(0x0A, n) + lr.pb_bytes(0x12, feat))
    feats = (entry(b"ids", lr.pb_bytes(0x1A, i64)) + entry(b"more", lr.pb_bytes(0x1A, i64u))
             + entry(b"f", lr.pb_bytes(0x12, flt)) + b"\x98\x06\x2a" + b"\x1b\x08\x01\x1c")  # varint 99, group 3
    ex = lr.pb_bytes(0x0A, feats) + b"\x15\x00\x00\x00\x00"  # + unknown fixed32 field 2
    got = lr.decode_example(ex, 0, len(ex), lambda p: ("foreign", p))
    as_text = [(n, lr.feature_bytes(k, v, lambda p: ("foreign", p), n)) for n, k, v in got]
    check("tfrecord: foreign Example decoded (packed/unpacked int64, floats, unknown fields, group)",
          as_text == [(b"ids", b"1 150 -5"), (b"more", b"7 2"), (b"f", b"0.5 0.100000001")], str(as_text))


def rec_parts(framed):
    """[(cflag, length)] of the parts in a .rec byte string."""
    parts, p = [], 0
    while p < len(framed):
        _, lrec = struct.unpack_from("<II", framed, p)
        parts.append((lrec >> 29, lrec & ((1 << 29) - 1)))
        p += 8 + lr.align_up(lrec & ((1 << 29) - 1), 4)
    return parts


def test_recordio(t):
    # Framing alone: kMagic at data offsets 0, 4, 12 and 24 (the end) splits; the one at 17 does not.
    data = M + M + b"abcd" + M + b"e" + M + b"fgh" + M
    assert len(data) == 28 and data[17:21] == M
    framed = lr.dmlc_frame(data)
    parts = rec_parts(framed)
    check("recordio: kMagic at aligned offsets 0, 4, 12 and the end splits; unaligned 17 does not",
          parts == [(1, 0), (2, 0), (2, 4), (2, 8), (3, 0)] and lr.read_rec_records(framed, "f") == [(0, data)], str(parts))
    check("recordio: labels rebuilt as integers, %.9g, space-joined",
          lr.label_text([3.0]) == b"3" and lr.label_text([0.25, 1.0]) == b"0.25 1"
          and lr.label_text(struct.unpack("<f", struct.pack("<f", 0.1))) == b"0.100000001")
    s = labelled_samples() + [(b"n02/multi", [(b"jpg", b"m"), (b"cls", b"1 0")])]  # IRHeader flag 2
    write_recordio(f"{t}/rec", s)
    got = rec_parts(open(f"{t}/rec/shard-000000.rec", "rb").read())
    check("recordio: the payload with kMagic at aligned offsets was written as parts 1, 2, 2, 3",
          [c for c, _ in got] == [0, 1, 2, 2, 3] and got[1:] == [(1, 24), (2, 4), (2, 3 + 4 + 1), (3, 0)], str(got))
    good("recordio: split records reassembled, IRHeader labels rebuilt as cls, .idx/.lst checked", "recordio",
         f"{t}/rec", f"{t}/x", s)
    un = unlabelled_samples()
    write_recordio(f"{t}/recu", un, per=4, label=False)
    good("recordio: unlabelled, multi-field samples and awkward paths", "recordio", f"{t}/recu", f"{t}/x", un)

    def rewrite(dst, fn):
        edit(copy(f"{t}/rec", dst) + "/shard-000000.rec", fn)
    first = lr.dmlc_frame(ir_record(b"0", 0, 0, b"\xff\xd8hello\xff\xd9"))
    split_start = M + struct.pack("<I", 1 << 29 | 4) + b"abcd"
    rewrite(f"{t}/r1", lambda b: b + split_start)
    bad("recordio: a split record whose end part is missing (EOF) is rejected", "recordio", f"{t}/r1", f"{t}/x",
        "missing its end part", "shard-000000.rec")
    rewrite(f"{t}/r2", lambda b: split_start + b)
    bad("recordio: a cflag=1 part followed by a new cflag=0 record is rejected", "recordio", f"{t}/r2", f"{t}/x",
        "missing its end part", "offset 12")
    rewrite(f"{t}/r3", lambda b: b[:len(first) - 1] + b"\x01" + b[len(first):])
    bad("recordio: non-zero padding is rejected", "recordio", f"{t}/r3", f"{t}/x", "padding bytes not zero")
    unsplit = M + struct.pack("<I", 28) + ir_record(b"0", 0, 0, M)
    rewrite(f"{t}/r4", lambda b: unsplit + b[len(first):])
    bad("recordio: an aligned kMagic left inside a whole record is rejected", "recordio", f"{t}/r4", f"{t}/x",
        "not split exactly")
    # Records of sample 1 (two fields in the unlabelled set) made non-consecutive: swap two records.
    recs = lr.read_rec_records(open(f"{t}/recu/shard-000000.rec", "rb").read(), "x")
    bad_order = [recs[0], recs[2], recs[1], recs[3]]
    p = copy(f"{t}/recu", f"{t}/r5")
    blob, idx = b"", b""
    for n, (_, d) in enumerate(bad_order):
        idx += b"%d\t%d\n" % (n, len(blob))
        blob += lr.dmlc_frame(d)
    open(p + "/shard-000000.rec", "wb").write(blob)
    open(p + "/shard-000000.idx", "wb").write(idx)
    bad("recordio: records of samples out of order are rejected", "recordio", p, f"{t}/x", "IRHeader id")
    p = copy(f"{t}/rec", f"{t}/r6") + "/shard-000001.idx"
    edit(p, lambda b: b.replace(b"1\t", b"1\t4", 1))
    bad("recordio: a wrong .idx offset is rejected", "recordio", f"{t}/r6", f"{t}/x", "shard-000001.idx", "line 2")


def test_wds(t):
    s = [x for x in unlabelled_samples() if x[0] != b"z/README"]  # an empty field has no wds2idx token
    write_wds(f"{t}/wds", s)
    good("wds: pax long and non-ASCII names, 100-byte name, index member, DALI v1.2 .idx", "wds", f"{t}/wds", f"{t}/x", s)
    s_all = unlabelled_samples()
    write_wds(f"{t}/wdsn", s_all, dali=False)
    good("wds: a member with an empty field name, no DALI index", "wds", f"{t}/wdsn", f"{t}/x", s_all)
    if shutil.which("tar"):
        env = dict(os.environ, LC_ALL="C.UTF-8")
        os.makedirs(f"{t}/gnu")
        ok, detail = True, ""
        for i, part in enumerate(chunks(s_all, 3)):
            sh = os.path.abspath(f"{t}/wdsn/shard-%06d.tar" % i)
            ls = subprocess.run(["tar", "--quoting-style=literal", "-tf", sh], capture_output=True, env=env)
            want = [lr.join_key_field(k, f) for k, fs in part for f, _ in fs] + [b"__dspack_index__"]
            x = subprocess.run(["tar", "-xf", sh, "-C", f"{t}/gnu"], capture_output=True, env=env)
            ok &= ls.stdout.split(b"\n")[:-1] == want and ls.returncode == x.returncode == 0 and not x.stderr
            detail += f"{ls.stdout} {ls.stderr} {x.stderr} "
        got = tree(f"{t}/gnu")
        got.pop(b"__dspack_index__", None)
        check("wds: GNU tar lists and extracts the hand-made shards byte-exact", ok and got == expected_files(s_all), detail)
    write_wds(f"{t}/w5", [(b"z/README", [(b"", b"x")])])
    bad("wds: a DALI index line with an empty field is rejected (DALI cannot tokenise it)", "wds", f"{t}/w5",
        f"{t}/x", "tokenise")
    lab = labelled_samples()
    write_wds(f"{t}/wdsl", lab, per=2, label=True, dali=False)
    good("wds: labelled, no DALI index", "wds", f"{t}/wdsl", f"{t}/x", lab)
    # a.jpg, b.jpg, a.cls: a non-adjacent sample.
    p = f"{t}/adj"
    os.makedirs(p)
    blob = tar_member(b"a.jpg", b"1") + tar_member(b"b.jpg", b"2") + tar_member(b"a.cls", b"0")
    open(p + "/shard-000000.tar", "wb").write(blob + tar_member(b"__dspack_index__", bytes(512)) + bytes(1024))
    write_manifest(p, "wds", ["shard-000000.tar"], [2], [], False)
    bad("wds: a non-adjacent sample (a.jpg, b.jpg, a.cls) is rejected naming key a", "wds", p, f"{t}/x",
        "non-adjacent", "(key a)", "offset 2048", "began at offset 0")
    sh = "shard-000001.tar"
    p = copy(f"{t}/wds", f"{t}/w1") + "/" + sh
    os.truncate(p, os.path.getsize(p) - 1024 - 1024 - 1024 - 1000)  # inside img/0001.jpg's data
    bad("wds: a shard truncated inside the last sample is rejected", "wds", f"{t}/w1", f"{t}/x", "truncated", sh)
    p = copy(f"{t}/wds", f"{t}/w2") + "/" + sh
    size = os.path.getsize(p)
    patch(p, size - 1024 - 512, lambda b: b ^ 0x02)  # first index entry's begin
    bad("wds: a wrong __dspack_index__ entry is rejected", "wds", f"{t}/w2", f"{t}/x", "index entry 0")
    p = copy(f"{t}/wds", f"{t}/w3") + "/shard-000000.idx"
    edit(p, lambda b: b.replace(b"v1.2", b"v1.1"))
    bad("wds: a DALI index with the wrong version line is rejected", "wds", f"{t}/w3", f"{t}/x", "line 1")
    if lr.xxh3_64 is not None:
        p = copy(f"{t}/wds", f"{t}/w4") + "/" + sh
        patch(p, os.path.getsize(p) - 1024 - 16, lambda b: b ^ 1)
        bad("wds: a wrong index XXH3 is rejected", "wds", f"{t}/w4", f"{t}/x", "index XXH3 mismatch")


def test_lmdb(t):
    try:
        import lmdb  # noqa: F401
    except ImportError:
        check("lmdb: python3-lmdb is installed", False, "apt-get install python3-lmdb")
        return
    s = labelled_samples()
    for layout in ("field", "sample"):
        write_lmdb(f"{t}/l_{layout}", s, layout)
        good(f"lmdb: {layout} layout read back byte-exact", "lmdb", f"{t}/l_{layout}", f"{t}/x", s)
    import lmdb
    p = copy(f"{t}/l_field", f"{t}/l1")
    env = lmdb.open(p)
    with env.begin(write=True) as txn:
        txn.put(b"__len__", b"5")
    env.close()
    bad("lmdb: a wrong __len__ is rejected", "lmdb", p, f"{t}/x", "__len__ 5 != 4")
    for cut in (3, 4096):
        p = copy(f"{t}/l_sample", f"{t}/l2")
        os.truncate(p + "/data.mdb", os.path.getsize(p + "/data.mdb") - cut)
        bad(f"lmdb: data.mdb cut by {cut} bytes is rejected before liblmdb reads past the end", "lmdb", p,
            f"{t}/x", "data.mdb", "truncated")


def hexdump(data, notes=()):
    lines = []
    for off in range(0, len(data), 16):
        row = data[off:off + 16]
        hx = " ".join(row[i:i + 2].hex() for i in range(0, len(row), 2))
        asc = "".join(chr(c) if 0x20 <= c < 0x7F else "." for c in row)
        lines.append(f"{off:08x}: {hx:<39}  {asc}")
    return "\n".join(lines)


def print_examples():
    ex = lr.encode_example(b"k", [(b"jpg", b"abc")])
    rec = tf_frame(ex)
    print(f"TFRecord: key 'k', field 'jpg' = 'abc': Example {len(ex)} bytes, record {len(rec)} bytes")
    print(f"  length crc masked {struct.unpack_from('<I', rec, 8)[0]:#010x} (crc32c {lr.crc32c(rec[:8]):#010x}),"
          f" data crc masked {struct.unpack_from('<I', rec, len(rec) - 4)[0]:#010x} (crc32c {lr.crc32c(ex):#010x})")
    print(hexdump(rec))
    print(f"  .idx line: '0 {len(rec)}'")
    data = ir_record(b"3", 7, 0, b"abcd" + M + b"ef")
    fr = lr.dmlc_frame(data)
    print(f"\nRecordIO: IRHeader(flag 0, label 3, id 7, id2 0) + payload 'abcd' kMagic 'ef': "
          f"record data {len(data)} bytes, framed {len(fr)} bytes")
    print(hexdump(fr))
    data2 = ir_record(b"1 2", 0, 1, b"xy")
    print(f"\nRecordIO: multi-label '1 2', id 0, id2 1, payload 'xy': {len(data2)} bytes of record data")
    print(hexdump(lr.dmlc_frame(data2)))


def main():
    if sys.argv[1:] == ["--print-examples"]:
        print_examples()
        return 0
    with tempfile.TemporaryDirectory(prefix="layout-selftest-") as t:
        for test in (test_tfrecord, test_recordio, test_wds, test_lmdb):
            os.makedirs(f"{t}/{test.__name__}")
            test(f"{t}/{test.__name__}")
    if lr.xxh3_64 is None:
        print("note: no xxhash (python3-xxhash or libxxhash): XXH3 checks were not exercised")
    print(f"{len(PASSED)} passed, {len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
