#!/usr/bin/env python3
"""Dataset files are reached through the storage interface (src/storage.h, ARCHITECTURE.md).

Above the core (formats/, pack/, sync/, bench/, python/src/), no source calls POSIX on files
directly: open/openat/pread/preadv/mmap/rename/renameat/stat/lstat/fstat/statx/opendir, nor the
core's own POSIX wrappers (OpenFile, OpenFileAt, ReadFullAt, ReadFullAtV, MappedFile::Open).
They go through Storage: a backend per URI scheme, with the counting and fault decorators over
it. A file that still must call POSIX is on ALLOWED with its reason; an entry whose file no
longer calls any is an error too, so the list only shrinks.
Exit 1 listing every offending call, 0 when there is none.
    storage_only.py [REPO_ROOT]"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
DIRS = ["formats", "pack", "sync", "bench", "python/src"]
# Programs of their own, not product code over dataset files.
SKIP = ("slowfs/", "tools/micro/", "tools/peers/")
CALL = re.compile(
    r"(?<![\w.>])(?:::)?(open|openat|pread|preadv|mmap|rename|renameat|stat|lstat|fstat|statx|"
    r"opendir|OpenFile|OpenFileAt|ReadFullAt|ReadFullAtV|MappedFile::Open)\s*\(")

LOCAL_DST = ("dssync's staging directory on the node's disk: its versions, `current` link, free "
             "space and --delete walk (its files go through Storage)")
ALLOWED = {
    # The writers of native, wds, tfrecord and recordio go through Storage (RandomWriteFile);
    # LMDB's is local by nature.
    "formats/native/global_index.cc": "maps index.dsi where caps().mmap (read whole elsewhere)",
    "formats/interop/lmdb_writer.cc": "liblmdb writes a local file it maps (RequireMmap)",
    "formats/interop/lmdb_reader.cc": "liblmdb maps data.mdb by path (RequireMmap asked first)",
    "formats/interop/lmdb_check.cc": "checks data.mdb's pages before liblmdb maps it (local only)",
    "formats/interop/lmdb_common.cc": "hashes data.mdb, a local file (LMDB is local only)",
    # The packer reads archives through Storage too (libarchive callbacks).
    "pack/inspect.cc": ("`dspack extract` walks OUT with openat(O_NOFOLLOW) per component, so a "
                        "key never writes through a symlink; Storage has no no-follow open"),
    "sync/syncer.cc": LOCAL_DST,
    "sync/staged.cc": LOCAL_DST,
    "bench/io/io_files.cc": "dsbench io lays out and opens fio's job files for its engines (fd hooks)",
    "bench/io/clone_files.cc": "dsbench io's engines work on fds (fio's file hooks)",
    "bench/io/io_verify.cc": "dsbench io's verify reads back its own job files by fd, as fio's",
    "bench/io/io_job.cc": "dsbench io's test files for its engines (fio's file hooks)",
    "bench/storage/storage.cc": "dsbench storage's raw device checks, as fio's",
    "bench/meta/meta_fs.cc": ("dsbench meta times the file system's own calls on a local PATH, as "
                              "mdtest's POSIX backend does (a URL goes through Storage)"),
    "bench/watch/watch.cc": ("dsbench watch observes a job, not a dataset: /proc, the page cache of "
                             "the files the job has open (mincore), its own log and epoch file"),
    "bench/mpi_cli.cc": "dsbench io's and meta's test paths under mpirun (local, as the engines')",
}


def code_only(line):
    """The line without a // comment and without string literals."""
    line = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', line)
    i = line.find("//")
    return line if i < 0 else line[:i]


def main():
    found = {}
    for d in DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix not in (".cc", ".h"):
                continue
            rel = p.relative_to(ROOT).as_posix()
            if rel.startswith(SKIP):
                continue
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
                for m in CALL.finditer(code_only(line)):
                    found.setdefault(rel, []).append((n, m.group(1)))
    bad = 0
    for rel, hits in sorted(found.items()):
        if rel in ALLOWED:
            continue
        for n, name in hits:
            print(f"{rel}:{n}: {name}() on a file: go through Storage (src/storage.h), or add "
                  f"{rel} to ALLOWED in {pathlib.Path(__file__).name} with the reason")
            bad += 1
    for rel in sorted(set(ALLOWED) - set(found)):
        print(f"{rel}: on ALLOWED but calls no POSIX file function any more: remove the entry")
        bad += 1
    if bad:
        return 1
    print(f"storage_only: {sum(len(v) for v in found.values())} calls in {len(found)} allowed "
          f"files, none elsewhere")
    return 0


if __name__ == "__main__":
    sys.exit(main())
