#!/usr/bin/env python3
"""Libraries speak in fields, CLIs in flags (docs/cli.md#option-names-in-messages).

A string literal in a library source (src/, formats/, pack/, sync/, bench/: everything but a tool's
main and its CLI files)
must not name a command-line flag such as --force: a library names the option's field in
backticks (`existing=replace`) and each CLI renders it as its own flag (RenderOptionNames in
src/status.h). Exit 1 listing every offending literal, 0 when there is none.
    no_flags_in_libraries.py [REPO_ROOT]"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2])
LIBRARY_DIRS = ["src", "formats", "pack", "sync", "bench"]
MAINS = {"pack/dspack_main.cc", "sync/dssync_main.cc", "sync/sync_cli.cc", "src/cli_args.h", "src/cli_args.cc",
         # dsbench's CLI: its main and the files that parse its flags and print its reports
         "bench/dsbench_main.cc", "bench/training_cli.cc", "bench/mpi_cli.cc", "bench/io_cli.cc",
         "bench/io_cli.h", "bench/fio_cli.cc", "bench/s3_cli.cc", "bench/watch_cli.cc", "pack/convert_cli.cc", "pack/inspect_cli.cc",
         # fio's command-line parser: it parses flags, so its messages and help name them
         "bench/io/fio_options.cc", "bench/io/fio_option_table.cc", "bench/io/fio_tokenizer.cc"}
# Programs of their own: the slow file system (its daemon, and mount.cc, which spawns the daemon
# with its argv) and the micro-benchmarks.
OWN_PROGRAMS = ("slowfs/", "tools/micro/")
# (file, literal) pairs that name a flag on purpose, each with its reason.
ALLOWED = {
    # dssync's report says where rank/world came from: a value of its JSON report (docs/dssync.md),
    # not a message; the other sources are environment variable names.
    ("sync/plan.cc", '"--rank/--world"'),
    # dsbench watch's baseline runs nvidia-smi with its own flags (a command line, not a message).
    ("bench/watch/watch.cc", '"timeout 5 nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total "'),
    ("bench/watch/watch.cc", '"--format=csv,noheader,nounits 2>/dev/null"'),
}
LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"')
FLAG = re.compile(r'(?:^|[\s(\'`,])--[a-z][a-z0-9-]*')


def code_only(line):
    """The line without a // comment (outside string literals)."""
    out, i, in_str = [], 0, False
    while i < len(line):
        c = line[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < len(line):
                out.append(line[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif line.startswith("//", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


bad = []
for d in LIBRARY_DIRS:
    for path in sorted((ROOT / d).rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        rel = path.relative_to(ROOT).as_posix()
        if rel in MAINS or rel.startswith(OWN_PROGRAMS):
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for lit in LITERAL.findall(code_only(line)):
                if FLAG.search(lit[1:-1]) and (rel, lit) not in ALLOWED:
                    bad.append(f"{rel}:{n}: {lit}")
for b in bad:
    print(b)
if bad:
    print(f"{len(bad)} flag names in library string literals: name the option's field in "
          "backticks instead (src/status.h, RenderOptionNames)", file=sys.stderr)
    sys.exit(1)
print("ok - no flag names in library string literals")
