#!/usr/bin/python3
"""layout_readers.py FORMAT OUT EXTRACT_DIR: independent readers of the interop layouts that
`dspack convert SRC OUT --format tfrecord|recordio|wds|lmdb` writes, written from the layout
contract (docs/formats/{tfrecord,recordio,wds,lmdb}.md) and the public sources it follows:
tensorflow record_writer.cc + crc32c.h (masked CRC32C framing), dmlc-core recordio.h/.cc and
mxnet recordio.py (kMagic parts, IRHeader "IfQQ"), DALI tfrecord2idx and wds2idx.py (index
files), webdataset tariterators.py (grouping, `__*__` members) and liblmdb via python3-lmdb.

It reads every shard named in OUT/dspack.json (cross-checked with a glob of OUT), checks every
byte the contract pins down, and writes each sample's fields to
EXTRACT_DIR/JoinKeyField(key, field), as `dspack extract DATASET DIR --with-labels` does for a
native dataset, so that `diff -r` against that extract compares payloads byte for byte.
Exit 0 if clean; 1 on the first violation, one line naming the file, offset and key; 2 on usage.
Standard library only, plus `lmdb` for lmdb and, for XXH3, python3-xxhash or else the reference
libxxhash through ctypes (without either, XXH3 values are not checked and the summary says so).
The CRC32C comes from python3-crcmod's C extension when it is there (scripts/deps.sh installs
it; ~100x faster), else from the pure-Python slicing-by-8 below (~18 MB/s); both must pass the
RFC 3720 check values.
"""
import ctypes, ctypes.util, glob, json, os, re, struct, sys, tarfile


def _load_xxh3():
    """XXH3_64 (seed 0) from python3-xxhash, else from the reference C library libxxhash."""
    try:
        import xxhash
        return xxhash.xxh3_64_intdigest
    except ImportError:
        pass
    try:
        f = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0").XXH3_64bits
    except (OSError, AttributeError):
        return None
    f.restype, f.argtypes = ctypes.c_uint64, [ctypes.c_char_p, ctypes.c_size_t]
    return lambda b: f(bytes(b), len(b))


xxh3_64 = _load_xxh3()  # None: XXH3 values are not checked, and the summary says so


class Bad(Exception):
    pass


def show(b):
    """Bytes as text, non-printable bytes as \\xNN (docs/cli.md)."""
    return "".join(chr(c) if 0x20 <= c < 0x7F and c != 0x5C else f"\\x{c:02x}" for c in b)


def need(cond, msg, file, off=None, key=None):
    if not cond:
        where = file + ("" if off is None else f": {off}" if isinstance(off, str) else f": offset {off}")
        if key is not None:
            where += f" (key {show(key)})"
        raise Bad(f"{where}: {msg}")


def align_up(x, a):
    return (x + a - 1) // a * a


# ---- CRC-32C (Castagnoli, reflected 0x82F63B78), slicing-by-8; TensorFlow's masking ----------
def _crc_entry(c):
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    return c


_T = [[_crc_entry(i) for i in range(256)]]
for _k in range(7):
    _T.append([(v >> 8) ^ _T[0][v & 0xFF] for v in _T[-1]])


def crc32c_pure(data):
    data = memoryview(data).cast("B")
    crc, n = 0xFFFFFFFF, len(data) // 8 * 8
    t0, t1, t2, t3, t4, t5, t6, t7 = _T
    for a, b in struct.iter_unpack("<II", data[:n]):
        a ^= crc
        crc = (t7[a & 0xFF] ^ t6[(a >> 8) & 0xFF] ^ t5[(a >> 16) & 0xFF] ^ t4[a >> 24] ^
               t3[b & 0xFF] ^ t2[(b >> 8) & 0xFF] ^ t1[(b >> 16) & 0xFF] ^ t0[b >> 24])
    for x in data[n:]:
        crc = t0[(crc ^ x) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _load_crc32c():
    """crcmod's CRC-32C when its C extension loads (its pure-Python fallback is slower than ours)."""
    try:
        import crcmod.predefined
        if not sys.modules["crcmod.crcmod"]._usingExtension:
            return crc32c_pure
        f = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    except (ImportError, AttributeError, KeyError):
        return crc32c_pure
    return lambda data: f(memoryview(data).cast("B"))


crc32c = _load_crc32c()


def masked_crc(data):
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


for _f in {crc32c_pure, crc32c}:
    assert _f(bytes(32)) == 0x8A9136AA, "CRC32C self-test (RFC 3720 B.4) failed"
    assert _f(b"123456789") == 0xE3069283, "CRC32C check value failed"
    assert _f(memoryview(b"\x01" * 13)[1:]) == crc32c_pure(b"\x01" * 12), "CRC32C of a memoryview slice"


# ---- keys and fields (docs/formats/native.md "Keys and fields") -------------------------------
def split_key_field(path):
    """Path -> (key, field): key up to the first '.' of the last component; the whole path and an
    empty field when that would lose the name (no dot, leading dot, or only a trailing dot)."""
    slash = path.rfind(b"/") + 1
    dot = path.find(b".", slash)
    if dot <= slash or dot == len(path) - 1:
        return path, b""
    return path[:dot], path[dot + 1:]


def join_key_field(key, field):
    return key + b"." + field if field else key


def label_text(values):
    """Labels as the cls field holds them: integers as integers, else %.9g; several joined by ' '."""
    out = []
    for v in values:
        out.append(str(int(v)) if v == v and abs(v) != float("inf") and v == int(v) else "%.9g" % v)
    return " ".join(out).encode()


# ---- dspack.json, the shard list, classes.txt, and the sink that checks and extracts ---------
EXT = {"tfrecord": ".tfrecord", "recordio": ".rec", "wds": ".tar", "lmdb": ".mdb"}


def load_manifest(out, fmt):
    path = os.path.join(out, "dspack.json")
    need(os.path.isfile(path), "missing: the commit point of a finished dataset", "dspack.json")
    with open(path, "rb") as f:
        man = json.load(f)
    need(man.get("format") == fmt, f"format {man.get('format')!r}, expected {fmt!r}", "dspack.json")
    need(man.get("version") == 1, f"version {man.get('version')!r} != 1", "dspack.json")
    for k in ("samples", "payload_bytes"):
        need(isinstance(man.get(k), int) and man[k] >= 0, f"{k} missing or not a count", "dspack.json")
    need(man.get("label_field") in ("cls", ""), "label_field must be \"cls\" or \"\"", "dspack.json")
    if fmt == "lmdb":
        man.setdefault("shards", [])
    need(isinstance(man.get("shards"), list), "shards missing", "dspack.json")
    left = sorted(f for f in os.listdir(out) if f.endswith(".tmp"))
    need(not left, f"temporary file(s) left in OUT: {left}", "dspack.json")
    if fmt != "lmdb":
        names = [s.get("name") for s in man["shards"]]
        want = ["shard-%06d%s" % (i, EXT[fmt]) for i in range(len(names))]
        need(names == want, f"shard names {names[:3]}... are not {want[:3]}... in order", "dspack.json")
        on_disk = sorted(os.path.basename(p) for p in glob.glob(os.path.join(glob.escape(out), "shard-*" + EXT[fmt])))
        need(on_disk == want, f"shards on disk {on_disk[:5]} != dspack.json's list {want[:5]}", "dspack.json")
    for sh in man["shards"]:
        need(os.path.isfile(os.path.join(out, sh["name"])), "listed in dspack.json but missing", sh["name"])
    classes = None
    cpath = os.path.join(out, "classes.txt")
    if man["label_field"]:
        need(os.path.isfile(cpath), "missing although label_field is \"cls\"", "classes.txt")
        with open(cpath, "rb") as f:
            text = f.read()
        need(text == b"" or text.endswith(b"\n"), "last line not terminated", "classes.txt")
        classes = text.split(b"\n")[:-1]
    else:
        need(not os.path.exists(cpath), "present but label_field is empty", "classes.txt")
    return man, classes


class Sink:
    """Checks samples as the readers find them and writes their fields under dest."""

    def __init__(self, dest, man, classes):
        self.dest, self.label, self.classes = os.fsencode(dest), man["label_field"].encode(), classes
        self.seen, self.count, self.payload = {}, 0, 0
        os.makedirs(self.dest, exist_ok=True)

    def add(self, file, off, key, fields):
        need(key, "empty key", file, off)
        need(key not in self.seen, f"key also stored at {self.seen.get(key)}", file, off, key)
        self.seen[key] = f"{file} {off}" if isinstance(off, str) else f"{file} offset {off}"
        names = [n for n, _ in fields]
        need(fields, "sample with no fields", file, off, key)
        need(len(set(names)) == len(names), f"duplicate field names {names}", file, off, key)
        if self.label:
            need(self.label in names, "no cls label field although label_field is \"cls\"", file, off, key)
            v = dict(fields)[self.label]  # one class number, or several joined by ' ' (multi-label)
            need(all(re.fullmatch(rb"0|[1-9][0-9]*", t) and int(t) < len(self.classes) for t in v.split(b" ")),
                 f"label {show(v)} is not class numbers below {len(self.classes)}", file, off, key)
        for name, data in fields:
            rel = join_key_field(key, name)
            parts = rel.split(b"/")
            need(b"\0" not in rel and all(p not in (b"", b".", b"..") for p in parts),
                 f"unsafe path {show(rel)}", file, off, key)
            path = os.path.join(self.dest, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            self.payload += len(data)
        self.count += 1

    def finish(self, man):
        need(self.count == man["samples"], f"{self.count} samples read, dspack.json says {man['samples']}", "dspack.json")
        need(self.payload == man["payload_bytes"],
             f"{self.payload} field bytes read, dspack.json payload_bytes {man['payload_bytes']}", "dspack.json")


def check_sizes_and_hashes(out, man):
    """Last, so that a damaged shard is reported by what is wrong inside it, not by its hash."""
    for sh in man["shards"]:
        p = os.path.join(out, sh["name"])
        if "bytes" in sh:
            need(os.path.getsize(p) == sh["bytes"], f"size {os.path.getsize(p)} != dspack.json bytes {sh['bytes']}", sh["name"])
        if xxh3_64 is not None and "xxh3" in sh:
            with open(p, "rb") as f:
                got = "%016x" % xxh3_64(f.read())
            need(got == sh["xxh3"], f"xxh3 {got} != dspack.json {sh['xxh3']}", sh["name"])


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def check_lines(path, got, want):
    """Compare a text sidecar with the lines it must hold; report the first differing line."""
    name = os.path.basename(path)
    if got == want:
        return
    g, w = got.split(b"\n"), want.split(b"\n")
    i = next((i for i, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)) - 1)
    need(False, f"line {i + 1} is {show(g[i] if i < len(g) else b'')!r}, expected "
                f"{show(w[i] if i < len(w) else b'')!r}", name)


def shard_count(man, i, n, name):
    want = man["shards"][i].get("samples")
    need(want is None or want == n, f"{n} samples in the shard, dspack.json says {want}", name)


# ---- TFRecord --------------------------------------------------------------------------------
def varint(buf, pos, end, where):
    result = shift = 0
    while True:
        need(pos < end, "varint runs past the end of its message", *where(pos))
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        need(shift < 70, "varint longer than 10 bytes", *where(pos))


def field_value(buf, pos, end, fn, wt, where, at):
    """Read the value of a field whose tag ends at pos: an int for a varint, bytes for fixed32/64,
    (start, end) for length-delimited, None for a group (skipped). Returns (value, next pos)."""
    if wt == 0:
        return varint(buf, pos, end, where)
    if wt in (1, 5):
        n = 8 if wt == 1 else 4
        need(pos + n <= end, "fixed-width field runs past its message", *where(at))
        return bytes(buf[pos:pos + n]), pos + n
    if wt == 2:
        n, pos = varint(buf, pos, end, where)
        need(pos + n <= end, "length-delimited field runs past its message", *where(at))
        return (pos, pos + n), pos + n
    if wt == 3:
        while True:  # a (deprecated) group: skip fields up to the matching end-group tag
            need(pos < end, f"group {fn} has no end tag", *where(at))
            tag_at = pos
            tag, pos = varint(buf, pos, end, where)
            if tag & 7 == 4:
                need(tag >> 3 == fn, f"end-group tag {tag >> 3} closes group {fn}", *where(tag_at))
                return None, pos
            _, pos = field_value(buf, pos, end, tag >> 3, tag & 7, where, tag_at)
    need(False, f"wire type {wt} where a field starts", *where(at))


def pb_fields(buf, pos, end, where):
    """Yield (field number, wire type, value) for each field of the protobuf message buf[pos:end];
    unknown fields are the caller's to ignore, groups are skipped."""
    while pos < end:
        at = pos
        tag, pos = varint(buf, pos, end, where)
        fn, wt = tag >> 3, tag & 7
        need(fn >= 1, "field number 0", *where(at))
        v, pos = field_value(buf, pos, end, fn, wt, where, at)
        if wt != 3:
            yield fn, wt, v


def decode_list(buf, kind, rng, where):
    vals = []
    for fn, wt, v in pb_fields(buf, rng[0], rng[1], where):
        if fn != 1:
            continue
        if kind == 1:
            need(wt == 2, "BytesList.value is not length-delimited", *where(rng[0]))
            vals.append(bytes(buf[v[0]:v[1]]))
        elif kind == 2 and wt == 5:
            vals.append(struct.unpack("<f", v)[0])
        elif kind == 2 and wt == 2:
            need((v[1] - v[0]) % 4 == 0, "packed FloatList length not a multiple of 4", *where(v[0]))
            vals += [x for (x,) in struct.iter_unpack("<f", buf[v[0]:v[1]])]
        elif kind == 3 and wt == 0:
            vals.append(v - (1 << 64) if v >= 1 << 63 else v)
        elif kind == 3 and wt == 2:
            p = v[0]
            while p < v[1]:
                x, p = varint(buf, p, v[1], where)
                vals.append(x - (1 << 64) if x >= 1 << 63 else x)
        else:
            need(False, f"wire type {wt} for a {('', 'Bytes', 'Float', 'Int64')[kind]}List value", *where(rng[0]))
    return vals


def decode_example(buf, start, end, where):
    """tf.train.Example -> [(feature name, kind 1|2|3 or None, values)], map entries in order."""
    out = []
    for fn, wt, v in pb_fields(buf, start, end, where):
        if fn != 1:
            continue
        need(wt == 2, "Example.features is not length-delimited", *where(start))
        for fn2, wt2, v2 in pb_fields(buf, v[0], v[1], where):
            if fn2 != 1:
                continue
            need(wt2 == 2, "Features.feature entry is not length-delimited", *where(v[0]))
            name, kind, vals = b"", None, []
            for fn3, wt3, v3 in pb_fields(buf, v2[0], v2[1], where):
                if fn3 in (1, 2):
                    need(wt3 == 2, "map entry key/value is not length-delimited", *where(v2[0]))
                if fn3 == 1:
                    name = bytes(buf[v3[0]:v3[1]])
                elif fn3 == 2:
                    for fn4, wt4, v4 in pb_fields(buf, v3[0], v3[1], where):
                        if fn4 in (1, 2, 3):
                            need(wt4 == 2, "Feature value list is not length-delimited", *where(v3[0]))
                            if fn4 != kind:  # a oneof: another member clears; the same one merges
                                kind, vals = fn4, []
                            vals += decode_list(buf, fn4, v4, where)
            out.append((name, kind, vals))
    return out


def feature_bytes(kind, vals, where, name):
    if kind == 1:
        need(len(vals) == 1, f"feature {show(name)}: bytes_list holds {len(vals)} values, a field takes one", *where(0))
        return vals[0]
    if kind == 2:
        return " ".join("%.9g" % v for v in vals).encode()
    if kind == 3:
        return " ".join(str(v) for v in vals).encode()
    need(False, f"feature {show(name)} has no value list", *where(0))


def pb_len(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def pb_bytes(tag, data):
    return bytes([tag]) + pb_len(len(data)) + data


def encode_example(key, fields):
    """The Example dspack writes: "__key__" first, then one BytesList feature per field."""
    entries = b"".join(pb_bytes(0x0A, pb_bytes(0x0A, n) + pb_bytes(0x12, pb_bytes(0x0A, pb_bytes(0x0A, d))))
                       for n, d in [(b"__key__", key)] + list(fields))
    return pb_bytes(0x0A, entries)


def read_tfrecord(out, man, sink):
    for i, sh in enumerate(man["shards"]):
        name = sh["name"]
        buf = memoryview(read_file(os.path.join(out, name)))
        pos, idx, n = 0, [], 0
        while pos < len(buf):
            rec = pos
            need(pos + 12 <= len(buf), "truncated record header (file ends inside the 12-byte length + CRC)", name, pos)
            length, lcrc = struct.unpack_from("<QI", buf, pos)
            need(masked_crc(buf[pos:pos + 8]) == lcrc, f"length CRC mismatch (length field {length})", name, pos)
            need(pos + 16 + length <= len(buf), f"record of {length} bytes runs past the end of the file (truncated)", name, pos)
            data = buf[pos + 12:pos + 12 + length]
            need(masked_crc(data) == struct.unpack_from("<I", buf, pos + 12 + length)[0], "data CRC mismatch", name, pos)

            def where(p, rec=rec):
                return name, rec + 12 + p
            feats = decode_example(data, 0, length, where)
            names = [f[0] for f in feats]
            need(len(set(names)) == len(names), f"feature names repeat: {[show(x) for x in names]}", name, rec)
            fields, key = [], None
            for fname, kind, vals in feats:
                if fname == b"__key__":
                    key = feature_bytes(kind, vals, where, fname)
                else:
                    fields.append((fname, feature_bytes(kind, vals, where, fname)))
            need(key is not None and names[0] == b"__key__", "the first feature is not \"__key__\"", name, rec)
            need(encode_example(key, fields) == data, "Example bytes differ from dspack's encoding (__key__ "
                 "first, one single-valued BytesList per field, minimal varints)", name, rec, key)
            sink.add(name, rec, key, fields)
            idx.append(b"%d %d\n" % (rec, 16 + length))
            pos += 16 + length
            n += 1
        shard_count(man, i, n, name)
        ip = os.path.join(out, name[:-len(".tfrecord")] + ".idx")
        need(os.path.isfile(ip), "missing (DALI tfrecord2idx index)", os.path.basename(ip))
        check_lines(ip, read_file(ip), b"".join(idx))
    idx_files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(glob.escape(out), "shard-*.idx")))
    need(idx_files == [s["name"][:-9] + ".idx" for s in man["shards"]], f"index files {idx_files[:5]} do not match the shards", "dspack.json")
    return []


# ---- MXNet RecordIO ----------------------------------------------------------------------------
KMAGIC = 0xCED7230A
KMAGIC_LE = struct.pack("<I", KMAGIC)


def dmlc_frame(data):
    """dmlc-core RecordIOWriter::WriteRecord: split at kMagic on 4-aligned offsets, pad the end."""
    out, dptr, i, n = [], 0, data.find(KMAGIC_LE), len(data)
    while 0 <= i:
        if i % 4 == 0:
            out += [KMAGIC_LE, struct.pack("<I", (1 if dptr == 0 else 2) << 29 | (i - dptr)), data[dptr:i]]
            dptr = i + 4
            i = data.find(KMAGIC_LE, dptr)
        else:
            i = data.find(KMAGIC_LE, i + 1)
    out += [KMAGIC_LE, struct.pack("<I", (3 if dptr else 0) << 29 | (n - dptr)), data[dptr:], bytes(-n % 4)]
    return b"".join(out)


def read_rec_records(buf, name):
    """Parse a .rec file into [(offset of first kMagic, reassembled record data)]."""
    pos, recs, size = 0, [], len(buf)
    while pos < size:
        start, parts = pos, []
        while True:
            if parts:
                need(pos + 8 <= size, f"split record that starts at offset {start} is missing its end part "
                     "(file ends after a cflag 1/2 part)", name, pos)
            need(pos + 8 <= size, "truncated part header (file ends inside magic + lrec)", name, pos)
            magic, lrec = struct.unpack_from("<II", buf, pos)
            need(magic == KMAGIC, f"expected kMagic 0xced7230a, found {magic:#010x}", name, pos)
            cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
            need(cflag <= 3, f"cflag {cflag} > 3", name, pos)
            if parts:
                need(cflag in (2, 3), f"split record that starts at offset {start} is missing its end part "
                     f"(a cflag {cflag} part follows)", name, pos)
            else:
                need(cflag in (0, 1), f"cflag {cflag} part with no start part before it", name, pos)
            padded = align_up(length, 4)
            need(pos + 8 + padded <= size, f"part of {length} bytes runs past the end of the file (truncated)", name, pos)
            need(not any(buf[pos + 8 + length:pos + 8 + padded]), "padding bytes not zero", name, pos + 8 + length)
            parts.append(bytes(buf[pos + 8:pos + 8 + length]))
            pos += 8 + padded
            if cflag in (0, 3):
                break
        data = KMAGIC_LE.join(parts)
        need(dmlc_frame(data) == buf[start:pos], "record not split exactly where kMagic occurs at 4-aligned "
             "offsets (dmlc-core RecordIOWriter::WriteRecord)", name, start)
        recs.append((start, data))
    return recs


def parse_lst(text, count, nlabels, name):
    """im2rec .lst: `n \\t label(s) \\t path \\n` per record; paths may hold tabs and newlines, so
    a path ends where the next record's `\\n<n+1>\\t` starts (or at the end)."""
    pos, rows = 0, []
    for n in range(count):
        head = b"%d\t" % n
        need(text.startswith(head, pos), f"line for record {n} does not start with {show(head)!r}", name, pos)
        pos += len(head)
        labels = []
        for _ in range(nlabels[n]):
            tab = text.find(b"\t", pos)
            need(tab >= 0, f"record {n}: too few label columns", name, pos)
            labels.append(text[pos:tab])
            pos = tab + 1
        end = len(text) - 1 if n == count - 1 else text.find(b"\n%d\t" % (n + 1), pos)
        need(end >= pos and text[end:end + 1] == b"\n", f"record {n}: line not terminated", name, pos)
        rows.append((labels, text[pos:end]))
        pos = end + 1
    need(pos == len(text), f"{len(text) - pos} bytes after the line of the last record", name, pos)
    return rows


def read_recordio(out, man, sink):
    labelled, expect_id = bool(man["label_field"]), 0
    for i, sh in enumerate(man["shards"]):
        name = sh["name"]
        base = name[:-len(".rec")]
        buf = memoryview(read_file(os.path.join(out, name)))
        recs = read_rec_records(buf, name)
        heads = []
        for off, data in recs:
            need(len(data) >= 24, "record shorter than the 24-byte IRHeader", name, off)
            flag, label, sid, id2 = struct.unpack_from("<IfQQ", data, 0)
            need(24 + 4 * flag <= len(data), f"IRHeader flag {flag}: labels run past the record", name, off)
            labels = list(struct.unpack_from("<%df" % flag, data, 24)) if flag else [label]
            need(flag == 0 or label == 0.0, f"multi-label IRHeader with label {label} != 0", name, off)
            need(labelled or (flag == 0 and label == 0.0), "unlabelled dataset but IRHeader carries a label", name, off)
            heads.append((off, sid, id2, labels, data[24 + 4 * flag:], flag))
        ip, lp = os.path.join(out, base + ".idx"), os.path.join(out, base + ".lst")
        need(os.path.isfile(ip), "missing (MXNet/DALI index)", base + ".idx")
        check_lines(ip, read_file(ip), b"".join(b"%d\t%d\n" % (n, off) for n, (off, _) in enumerate(recs)))
        need(os.path.isfile(lp), "missing (im2rec list: record -> path)", base + ".lst")
        rows = parse_lst(read_file(lp), len(recs), [max(h[5], 1) for h in heads], base + ".lst")
        samples = []  # consecutive records of one sample: same id, id2 = 0, 1, ...
        for (off, sid, id2, labels, payload, _), (lst_labels, path) in zip(heads, rows):
            key, field = split_key_field(path)
            for t, v in zip(lst_labels, labels):
                try:
                    ok = struct.unpack("<f", struct.pack("<f", float(t)))[0] == v
                except ValueError:
                    ok = False
                need(ok, f".lst label {show(t)!r} != IRHeader label {v}", name, off, key)
            if samples and sid == samples[-1][1]:
                s = samples[-1]
                need(key == s[2], f"records of sample id {sid} name keys {show(s[2])} and {show(key)}", name, off, key)
                need(id2 == len(s[4]), f"id2 {id2}, expected {len(s[4])} (field number in the sample)", name, off, key)
                need(labels == s[3], f"label {labels} differs from the sample's first record {s[3]}", name, off, key)
                s[4].append((field, payload))
            else:
                need(sid == expect_id, f"IRHeader id {sid}, expected sample number {expect_id} "
                     "(records of one sample must be consecutive)", name, off, key)
                need(id2 == 0, f"first record of a sample has id2 {id2}", name, off, key)
                samples.append([off, sid, key, labels, [(field, payload)]])
                expect_id += 1
        for off, _, key, labels, fields in samples:
            if labelled:
                fields = fields + [(b"cls", label_text(labels))]
            sink.add(name, off, key, fields)
        shard_count(man, i, len(samples), name)
    for ext in (".idx", ".lst"):
        got = sorted(os.path.basename(p) for p in glob.glob(os.path.join(glob.escape(out), "shard-*" + ext)))
        need(got == [s["name"][:-4] + ext for s in man["shards"]], f"{ext} files {got[:5]} do not match the shards", "dspack.json")
    return []


# ---- WebDataset tar --------------------------------------------------------------------------
def octal(field):
    s = bytes(field).rstrip(b"\0 ").lstrip(b" ")
    return int(s, 8) if s else 0


def is_meta(name):
    """webdataset tariterators.tar_file_iterator: top-level `__*__` members are skipped."""
    return (b"/" not in name and name.startswith(b"__") and name.endswith(b"__")) or \
        re.match(rb"__[^/]*__($|/)", name) is not None


def check_header(buf, off, typeflag, name, member=True):
    """A ustar header block; a member's (not a pax header's) also mode 0644, uid/gid 0, mtime 0."""
    h = buf[off:off + 512]
    need(h[257:265] == b"ustar\x0000", f"header magic/version {bytes(h[257:265])!r} is not ustar\\0 00", name, off + 257)
    need(h[156:157] == typeflag, f"typeflag {bytes(h[156:157])!r}, expected {typeflag!r}", name, off + 156)
    need(sum(h[:148]) + 8 * 32 + sum(h[156:]) == octal(h[148:156]), "header checksum mismatch", name, off + 148)
    if member:
        need(octal(h[100:108]) == 0o644, f"mode {octal(h[100:108]):o}, expected 644", name, off + 100)
        need(octal(h[108:116]) == 0 and octal(h[116:124]) == 0, "uid/gid not 0", name, off + 108)
        need(octal(h[136:148]) == 0, "mtime not 0", name, off + 136)


def pax_records(data, name, off):
    recs, pos = {}, 0
    while pos < len(data):
        sp = data.find(b" ", pos)
        need(sp > pos and data[pos:sp].isdigit(), "bad pax record length", name, off + pos)
        n = int(data[pos:sp])
        rec = data[sp + 1:pos + n]
        need(n > 0 and pos + n <= len(data) and rec.endswith(b"\n") and b"=" in rec, "bad pax record", name, off + pos)
        k, v = rec[:-1].split(b"=", 1)
        recs[k] = v
        pos += n
    return recs


def read_wds(out, man, sink):
    notes = []
    if xxh3_64 is None:
        notes.append("XXH3 of the __dspack_index__ entries not checked (no xxhash)")
    dali = [os.path.exists(os.path.join(out, s["name"][:-4] + ".idx")) for s in man["shards"]]
    need(all(dali) or not any(dali), "DALI .idx files exist for some shards but not all", "dspack.json")
    idx_files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(glob.escape(out), "shard-*.idx")))
    need(idx_files == [s["name"][:-4] + ".idx" for s in man["shards"] if any(dali)], f"stray .idx files {idx_files[:5]}", "dspack.json")
    for i, sh in enumerate(man["shards"]):
        name = sh["name"]
        path = os.path.join(out, name)
        buf = memoryview(read_file(path))
        size = len(buf)
        members = []
        try:
            with tarfile.open(path, "r:", encoding="utf-8", errors="surrogateescape") as tf:
                while (m := tf.next()) is not None:
                    members.append(m)
        except tarfile.TarError as e:
            at = f"after the member at offset {members[-1].offset}" if members else "at the start"
            raise Bad(f"{name}: tarfile stops {at}: {e} (shard truncated or damaged)") from None
        pos, samples, where_key = 0, [], {}
        for m in members:
            mname = m.name.encode("utf-8", "surrogateescape")
            need(m.offset == pos, f"member {show(mname)} starts at {m.offset}, previous data ended at {pos}", name, pos)
            need(m.type == tarfile.REGTYPE, f"member {show(mname)} is not a regular file", name, m.offset)
            need_pax = len(mname) > 100 or any(c >= 0x80 for c in mname)
            if m.offset_data - m.offset > 512:
                check_header(buf, m.offset, b"x", name, member=False)
                psize = octal(buf[m.offset + 124:m.offset + 136])
                need(m.offset + 512 + align_up(psize, 512) + 512 == m.offset_data, "pax header size mismatch", name, m.offset)
                recs = pax_records(bytes(buf[m.offset + 512:m.offset + 512 + psize]), name, m.offset + 512)
                need(set(recs) <= {b"path", b"size"}, f"pax records {sorted(recs)}: only path and size expected", name, m.offset)
                need((b"path" in recs) == need_pax, f"pax path record {'missing' if need_pax else 'not needed'}", name, m.offset)
                need((b"size" in recs) == (m.size >= 8 << 30), "pax size record iff size >= 8 GiB", name, m.offset)
                need(recs.get(b"path", mname) == mname, "pax path differs from tarfile's name", name, m.offset)
            else:
                need(not need_pax and m.size < 8 << 30, f"name {show(mname)} needs a pax header", name, m.offset)
                need(bytes(buf[m.offset:m.offset + 100]).rstrip(b"\0") == mname, "ustar name field != member name", name, m.offset)
            check_header(buf, m.offset_data - 512, b"0", name)
            end = m.offset_data + m.size
            need(end <= size, f"member {show(mname)} data runs past the end of the file (truncated)", name, m.offset_data)
            pos = align_up(end, 512)
            need(pos <= size and not any(buf[end:pos]), "data padding missing or not zero", name, end)
            if is_meta(mname):
                need(mname == b"__dspack_index__" and m is members[-1], f"unexpected meta member {show(mname)} "
                     "(webdataset skips top-level __*__ members)", name, m.offset)
                continue
            key, field = split_key_field(mname)
            if samples and samples[-1][1] == key:
                need(field not in [f for f, *_ in samples[-1][2]], "field repeats in a sample", name, m.offset, key)
                samples[-1][2].append((field, m))
            else:
                need(key not in where_key, f"non-adjacent sample: key began at offset {where_key.get(key)} and "
                     f"reappears at offset {m.offset} after another key", name, m.offset, key)
                where_key[key] = m.offset
                samples.append([m.offset, key, [(field, m)]])
        need(pos == size - 1024 and size >= 1024 and not any(buf[size - 1024:]),
             f"archive does not end with two zero blocks right after the last member (data ends at {pos}, file "
             f"size {size}): truncated?", name, pos)
        need(members and members[-1].name == "__dspack_index__", "last member is not __dspack_index__", name, pos)
        idx = members[-1]
        t = size - 1024 - 32
        magic, count, h, zero = struct.unpack_from("<8sQQQ", buf, t)
        need(magic == b"DSPKWIX1" and zero == 0, "bad __dspack_index__ trailer (magic DSPKWIX1, last u64 0)", name, t)
        need(count == len(samples), f"index count {count} != {len(samples)} samples in the shard", name, t + 8)
        first = size - 1024 - align_up(16 * count + 32, 512)
        need(idx.offset_data == first and idx.size == align_up(16 * count + 32, 512),
             f"index entries start at {idx.offset_data} (size {idx.size}), expected {first}", name, idx.offset)
        need(not any(buf[first + 16 * count:t]), "index padding not zero", name, first + 16 * count)
        for j, (off, key, fields) in enumerate(samples):
            last = fields[-1][1]
            want = (off, last.offset_data + align_up(last.size, 512))
            got = struct.unpack_from("<QQ", buf, first + 16 * j)
            need(got == want, f"index entry {j} is {got}, tar members give {want}", name, first + 16 * j, key)
        if xxh3_64 is not None:
            need(xxh3_64(buf[first:first + 16 * count]) == h, "index XXH3 mismatch", name, t + 16)
        for off, key, fields in samples:
            sink.add(name, off, key, [(f, bytes(buf[m.offset_data:m.offset_data + m.size])) for f, m in fields])
        shard_count(man, i, len(samples), name)
        if dali[i]:
            check_dali_wds_index(os.path.join(out, name[:-4] + ".idx"), samples)
    return notes


def check_dali_wds_index(path, samples):
    """DALI tools/wds2idx.py v1.2: `v1.2 <samples>`, then per sample `<ext> <data offset> <size>
    <name>` per member, joined by spaces; readers parse it with whitespace-separated `>>`."""
    name = os.path.basename(path)
    want = [b"v1.2 %d" % len(samples)]
    for _, _, fields in samples:
        want.append(b" ".join(b"%s %d %d %s" % (f, m.offset_data, m.size, m.name.encode("utf-8", "surrogateescape"))
                              for f, m in fields))
    check_lines(path, read_file(path), b"\n".join(want) + b"\n")
    need(len(samples) > 0, "DALI rejects an index with 0 samples (\"sample count must be positive\")", name)
    for n, (_, key, fields) in enumerate(samples, 1):  # as DALI's ParseSampleDesc tokenises it
        tok = want[n].split()
        need(len(tok) == 4 * len(fields) and all(int(tok[k + 1]) % 512 == 0 for k in range(0, len(tok), 4)),
             "line does not tokenise into <ext> <offset> <size> <name> groups (whitespace or empty field)", name, None, key)


# ---- LMDB --------------------------------------------------------------------------------------
def read_lmdb(out, man, sink):
    import lmdb
    need(os.path.isfile(os.path.join(out, "data.mdb")), "missing", "data.mdb")
    size = os.path.getsize(os.path.join(out, "data.mdb"))
    try:
        env = lmdb.open(out, readonly=True, lock=False, readahead=False, subdir=True)
    except lmdb.Error as e:
        raise Bad(f"data.mdb: liblmdb cannot open it: {e}") from None
    try:
        # liblmdb maps the file and trusts its meta page: pages past EOF are a SIGBUS, a short
        # last page reads as zeros. So the size is checked before any page is touched.
        psize, last = env.stat()["psize"], env.info()["last_pgno"]
        need(size % psize == 0 and size >= (last + 1) * psize, f"{size} bytes, but its meta page "
             f"uses pages 0..{last} of {psize} bytes ({(last + 1) * psize} bytes): truncated", "data.mdb")
        with env.begin(buffers=False) as txn:
            items = list(txn.cursor())
    finally:
        env.close()
    db = "data.mdb"
    kv = dict(items)
    need(b"__meta__" in kv and b"__len__" in kv, "no __meta__ or __len__ key", db)
    meta = json.loads(kv[b"__meta__"])
    need(meta.get("format") == "dspack-lmdb" and meta.get("version") == 1, f"__meta__ {meta}: not dspack-lmdb v1", db)
    layout, n = meta.get("layout"), meta.get("samples")
    need(layout in ("field", "sample"), f"__meta__ layout {layout!r}", db)
    need(man.get("lmdb_layout") == layout, f"dspack.json lmdb_layout {man.get('lmdb_layout')!r} != __meta__ {layout!r}", db)
    need(n == man["samples"] and meta.get("label_field") == man["label_field"], "__meta__ disagrees with dspack.json", db)
    need(kv[b"__len__"] == str(n).encode(), f"__len__ {show(kv[b'__len__'])} != {n}", db)
    keys = [k for k, _ in items]
    need(keys[-2:] == [b"__len__", b"__meta__"], "meta keys do not sort after all sample keys", db)
    rest = items[:-2]
    if layout == "sample":
        need([k for k, _ in rest] == [b"%010d" % i for i in range(n)], f"sample keys are not %010d for 0..{n - 1}", db)
        for k, v in rest:
            p, (klen,) = 4, struct.unpack_from("<I", v, 0)
            key = v[p:p + klen]
            need(len(key) == klen, "key runs past the value", db, None, k)
            p += klen
            need(p + 4 <= len(v), "field count runs past the value", db, None, k)
            (nf,), p, table = struct.unpack_from("<I", v, p), p + 4, []
            for _ in range(nf):
                need(p + 4 <= len(v), "field table runs past the value", db, None, k)
                (nl,) = struct.unpack_from("<I", v, p)
                need(p + 4 + nl + 8 <= len(v), "field table runs past the value", db, None, k)
                table.append((v[p + 4:p + 4 + nl], struct.unpack_from("<Q", v, p + 4 + nl)[0]))
                p += 4 + nl + 8
            need(p + sum(s for _, s in table) == len(v), "value length != header + sum of field sizes", db, None, k)
            fields = []
            for fname, s in table:
                fields.append((fname, v[p:p + s]))
                p += s
            sink.add(db, k.decode(), key, fields)
    else:
        groups = {}
        for k, v in rest:
            m = re.fullmatch(rb"([0-9]{10})\.(.*)", k, re.S)
            need(m is not None, "key is not %010d.<field>", db, None, k)
            groups.setdefault(int(m.group(1)), []).append((m.group(2), v))
        need(sorted(groups) == list(range(n)), f"sample numbers are not 0..{n - 1}", db)
        for s in range(n):
            entries = groups[s]
            key = dict(entries).get(b"__key__")
            need(key is not None, "no __key__ entry", db, None, b"%010d" % s)
            sink.add(db, (b"%010d" % s).decode(), key, [(f, v) for f, v in entries if f != b"__key__"])
    return []


READERS = {"tfrecord": read_tfrecord, "recordio": read_recordio, "wds": read_wds, "lmdb": read_lmdb}


def main(argv):
    if len(argv) != 4 or argv[1] not in READERS:
        print("usage: layout_readers.py tfrecord|recordio|wds|lmdb OUT EXTRACT_DIR", file=sys.stderr)
        return 2
    fmt, out, dest = argv[1:]
    if not os.path.isdir(out):
        print(f"layout_readers: {out}: not a directory", file=sys.stderr)
        return 2
    try:
        man, classes = load_manifest(out, fmt)
        sink = Sink(dest, man, classes)
        notes = READERS[fmt](out, man, sink)
        sink.finish(man)
        check_sizes_and_hashes(out, man)
    except Bad as e:
        print(f"layout_readers: {fmt}: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # bad bytes the checks above did not foresee (lmdb.Error, struct.error...)
        print(f"layout_readers: {fmt}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if xxh3_64 is None:
        notes.append("shard xxh3 values not checked (no xxhash)")
    print(f"OK: {fmt}: {sink.count} samples, {len(man['shards'])} shard(s), {sink.payload} field bytes"
          + "".join("; " + n for n in notes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
