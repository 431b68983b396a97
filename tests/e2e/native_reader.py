#!/usr/bin/python3
"""native_reader.py DATASET_DIR SOURCE_TREE: an independent reader of the dspack native format,
written from docs/formats/native.md alone. Checks every magic, CRC32C, reserved and padding byte,
shard index, footer and index.dsi; that the dataset holds exactly the regular files of SOURCE_TREE,
byte for byte; and a few random reads. Standard library only, but for the CRC-32C, which it
shares with layout_readers.py (python3-crcmod's C one, else pure Python, both checked against
RFC 3720's values there); xxh3 values are not checked. Meant for datasets of a few MB."""
import json, os, random, stat, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_readers import crc32c  # noqa: E402  (CRC-32C, Castagnoli, reflected)


class Bad(Exception):
    pass


def need(cond, msg, file, off=None, key=None):
    if not cond:
        where = file + ("" if off is None else f" @ offset {off}")
        if key is not None:
            where += " key " + repr(key.decode("utf-8", "backslashreplace"))
        raise Bad(f"{where}: {msg}")


def align_up(x, a):
    return (x + a - 1) // a * a


def check_zero(buf, a, b, msg, file, key=None):
    """Require buf[a:b] to be zero bytes; report the first one that is not."""
    rest = buf[a:b].lstrip(b"\0")
    need(not rest, msg, file, b - len(rest), key)


def parse_record(buf, pos, file, label_field):
    """Parse and check the record at buf[pos:]; return (record_len, key, [(name, bytes)])."""
    need(pos + 24 <= len(buf), "record header runs past the end", file, pos)
    magic, hcrc, rlen, meta_len, key_len, nfields = struct.unpack_from("<IIQIHH", buf, pos)
    need(magic == 0x01525344, f"bad record magic {magic:#010x}", file, pos)
    meta_end = pos + 24 + meta_len
    need(meta_end <= len(buf), "meta_len runs past the end", file, pos)
    need(crc32c(buf[pos + 8:meta_end]) == hcrc, "record header_crc mismatch", file, pos)
    key = bytes(buf[pos + 24:pos + 24 + key_len])
    need(1 <= key_len <= meta_len and nfields >= 1, "bad key_len or field_count", file, pos, key)
    p, table = pos + 24 + key_len, []
    for _ in range(nfields):
        need(p < meta_end, "field table runs past meta_len", file, pos, key)
        nlen = buf[p]
        need(p + 1 + nlen + 8 <= meta_end, "field table runs past meta_len", file, pos, key)
        table.append((bytes(buf[p + 1:p + 1 + nlen]), struct.unpack_from("<Q", buf, p + 1 + nlen)[0]))
        p += 1 + nlen + 8
    need(p == meta_end, "meta_len != key_len + sum(1 + name_len + 8)", file, pos, key)
    total = sum(size for _, size in table)
    need(rlen == 24 + meta_len + total + 4, "record_len != 24 + meta_len + sum(size) + 4", file, pos, key)
    need(pos + rlen <= len(buf), "record runs past the end", file, pos, key)
    data = buf[meta_end:meta_end + total]
    need(crc32c(data) == struct.unpack_from("<I", buf, pos + rlen - 4)[0], "data_crc mismatch", file, pos, key)
    names = [n for n, _ in table]
    need(len(set(names)) == len(names), "duplicate field name", file, pos, key)
    plain = [n for n in names if n != label_field]
    need(names == sorted(plain) + names[len(plain):], "fields not in bytewise name order, label last", file, pos, key)
    ends = [sum(size for _, size in table[:i + 1]) for i in range(len(table))]
    return rlen, key, [(nm, bytes(data[e - sz:e])) for (nm, sz), e in zip(table, ends)]


def scan_shard(path, name, number, first_sample, align, label_field):
    """Read one shard sequentially; return [(offset, record_len, key, fields)]."""
    with open(path, "rb") as f:
        buf = f.read()
    size = len(buf)
    need(size >= 64 + 32, "file shorter than header + footer", name, 0)
    magic, version, al, snum, first = struct.unpack_from("<8sIIQQ", buf, 0)
    need(magic == b"DSPKSHRD", "bad shard magic", name, 0)
    need(crc32c(buf[:60]) == struct.unpack_from("<I", buf, 60)[0], "shard header_crc mismatch", name, 60)
    need(version == 1, f"version {version} != 1", name, 8)
    need(al == align and al & (al - 1) == 0 and 1 <= al <= 1 << 30, f"align {al}, manifest {align}", name, 12)
    need(snum == number, f"shard_number {snum} != {number}", name, 16)
    need(first == first_sample, f"first_sample {first} != {first_sample}", name, 24)
    check_zero(buf, 32, 60, "reserved header bytes not zero", name)
    fo = size - 32
    ioff, count, icrc, fcrc, fmagic = struct.unpack_from("<QQII8s", buf, fo)
    need(fmagic == b"DSPKEND1", "bad footer magic", name, fo + 24)
    need(crc32c(buf[fo:fo + 20]) == fcrc, "footer_crc mismatch", name, fo)
    need(ioff + 16 * count + 32 == size, "index_offset + 16 * record_count + 32 != file size", name, fo)
    need(crc32c(buf[ioff:fo]) == icrc, "index_crc mismatch", name, ioff)
    pos = align_up(64, al)
    need(pos <= ioff, "index_offset before the first record", name, fo)
    check_zero(buf, 64, pos, "header padding not zero", name)
    records = []  # sequential walk, independent of the index
    while pos < ioff:
        rlen, key, fields = parse_record(buf, pos, name, label_field)
        end, nxt = pos + rlen, align_up(pos + rlen, al)
        need(nxt <= ioff, "record overlaps the index", name, pos, key)
        check_zero(buf, end, nxt, "record padding not zero", name, key)
        records.append((pos, rlen, key, fields))
        pos = nxt
    need(len(records) == count, f"{len(records)} records found, footer says {count}", name, fo + 8)
    for i, (off, rlen, key, _) in enumerate(records):
        need(struct.unpack_from("<QQ", buf, ioff + 16 * i) == (off, rlen),
             f"index entry {i} != scanned record (offset {off}, len {rlen})", name, ioff + 16 * i, key)
    return records


def check_index(path, man, samples):
    """Check index.dsi against the sequential scan; return its entries [(shard, offset, len)]."""
    with open(path, "rb") as f:
        buf = f.read()
    n, name = len(samples), man["index"]["name"]
    need(len(buf) >= 80, "index.dsi too short", name, 0)
    magic, version, shard_count, count, eoff, koff = struct.unpack_from("<8sIIQQQ", buf, 0)
    need(magic == b"DSPKIDX1", "bad index magic", name, 0)
    need(crc32c(buf[:60]) == struct.unpack_from("<I", buf, 60)[0], "index header_crc mismatch", name, 60)
    need(version == 1, f"version {version} != 1", name, 8)
    check_zero(buf, 40, 60, "reserved header bytes not zero", name)
    need(shard_count == len(man["shards"]) and count == n, "shard_count/sample_count mismatch", name, 12)
    need(eoff == 64 and koff == 64 + 16 * n, "bad entries_offset/keys_offset", name, 24)
    need(len(buf) == 64 + 32 * n + 16 == man["index"]["size"], "bad index.dsi size", name, 0)
    need(buf[-8:] == b"DSPKIEND", "bad index trailer magic", name, len(buf) - 8)
    entries = []
    for i, (shard, off, rlen, key, _) in enumerate(samples):
        e_off, packed = struct.unpack_from("<QQ", buf, 64 + 16 * i)
        entries.append((packed >> 40, e_off, packed & ((1 << 40) - 1)))
        need(entries[-1] == (shard, off, rlen), f"entry {i} != scanned record "
             f"(shard {shard}, offset {off}, len {rlen})", name, 64 + 16 * i, key)
    keys = list(struct.iter_unpack("<QQ", buf[koff:koff + 16 * n]))
    for i in range(1, n):
        need(keys[i - 1] < keys[i], "key table not sorted by (hash, sample)", name, koff + 16 * i)
    need(sorted(s for _, s in keys) == list(range(n)), "key table samples not a permutation", name, koff)
    return entries


def check_sources(samples, man, src, label_field, classes):
    """Compare every field with its source file (or class label); every source file must be stored."""
    found, keys, payload = set(), set(), 0  # found: rebuilt relative paths
    for shard, off, _, key, fields in samples:
        file = man["shards"][shard]["name"]
        need(key not in keys, "key stored in two samples", file, off, key)
        keys.add(key)
        need(label_field is None or fields[-1][0] == label_field, "no label field", file, off, key)
        for name, data in fields:
            payload += len(data)
            if name == label_field:
                cls = key.split(b"/")[0]
                need(b"/" in key and cls in classes, f"class folder {cls!r} not in classes", file, off, key)
                need(data == str(classes[cls]).encode(), f"label {data!r} != {classes[cls]}", file, off, key)
                continue
            rel = key + b"." + name if name else key
            need(rel not in found, f"path {rel!r} stored twice", file, off, key)
            found.add(rel)
            try:
                with open(os.path.join(src, rel), "rb") as f:
                    same = f.read() == data
            except OSError as e:
                need(False, f"cannot read source file: {e}", file, off, key)
            need(same, f"field {name!r} differs from source file {rel!r}", file, off, key)
    skipped = {os.fsencode(s["path"]) for s in man.get("skipped") or []}
    regular = {os.path.relpath(os.path.join(r, f), src) for r, _, fs in os.walk(src) for f in fs
               if stat.S_ISREG(os.lstat(os.path.join(r, f)).st_mode)}
    missing = sorted(regular - found - skipped)  # stored paths were all read above
    need(not missing, f"{len(missing)} source file(s) not in the dataset, first {missing[:1]}", "dataset")
    return found, regular, payload


def main(ds, src):
    ds, src = os.fsencode(ds), os.fsencode(src)
    with open(os.path.join(ds, b"manifest.json"), "rb") as f:
        man = json.load(f)
    need(man.get("format") == "dspack-native" and man.get("version") == 1, "bad format/version", "manifest.json")
    align, labels = man["align"], man.get("labels")
    label_field, classes = None, {}
    if labels is not None:
        label_field = labels["field"].encode()
        with open(os.path.join(ds, os.fsencode(labels["file"])), "rb") as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        classes = {c: i for i, c in enumerate(lines)}
        need(len(classes) == len(lines) == labels["classes"], "classes count mismatch", labels["file"])
    samples = []  # (shard number, offset, record_len, key, fields) in global sample order
    for number, sh in enumerate(man["shards"]):
        path = os.path.join(ds, os.fsencode(sh["name"]))
        need(os.path.getsize(path) == sh["size"], "size differs from manifest", sh["name"])
        need(sh["first_sample"] == len(samples), "manifest first_sample mismatch", sh["name"])
        recs = scan_shard(path, sh["name"], number, len(samples), align, label_field)
        need(len(recs) == sh["samples"], "sample count differs from manifest", sh["name"])
        samples += [(number, off, rlen, key, fields) for off, rlen, key, fields in recs]
    need(len(samples) == man["samples"], "manifest samples mismatch", "manifest.json")
    entries = check_index(os.path.join(ds, os.fsencode(man["index"]["name"])), man, samples)

    found, regular, payload = check_sources(samples, man, src, label_field, classes)
    n = len(samples)
    picks = sorted({0, n - 1} | set(random.Random(1).sample(range(n), min(8, n)))) if n else []
    for i in picks:  # random access through index.dsi, compared with the sequential scan
        shard, off, rlen = entries[i]
        file = man["shards"][shard]["name"]
        with open(os.path.join(ds, os.fsencode(file)), "rb") as f:
            f.seek(off)
            rec = f.read(rlen)
        got = parse_record(rec, 0, file, label_field)
        need(got == (rlen,) + samples[i][3:], f"random access to sample {i} differs", file, off, samples[i][3])
    print(f"OK: {n} samples, {len(man['shards'])} shards, align {align}, {len(found)} files matched, "
          f"{len(regular - found)} listed as skipped, {payload} field bytes (manifest payload_bytes "
          f"{man.get('payload_bytes')}), {len(classes)} classes, {len(picks)} random reads; xxh3 not checked")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: native_reader.py DATASET_DIR SOURCE_TREE")
    try:
        main(sys.argv[1], sys.argv[2])
    except (Bad, OSError, ValueError, KeyError, TypeError, IndexError, struct.error) as e:
        print("ERROR:", e if isinstance(e, Bad) else f"{type(e).__name__}: {e!r}")
        sys.exit(1)
