#!/usr/bin/python3
"""Renders a `dsbench compare` HTML report in headless Chromium and checks it against its JSON.

usage: check_report.py REPORT.html REPORT.json [--png OUT.png]

REPORT.json is dsbench's output ({"compare": {...}, ...}) or the compare object itself.
Checks the DOM after load (chromium --dump-dom): the title, at least two <svg>, one bar <rect>
per (layout, storage, cache) keyed "<layout>/<storage>/<cache>/samples_per_sec" whose data-value is
the samples_per_sec of its run at the most workers (others are worker-sweep points), the table
cells' samples_per_sec and au (no value where au is null), and the recommendation text. Then a 1280x2400 screenshot: a valid PNG, 1280 wide, and not blank.
--png keeps the screenshot. Exit 0 when all pass, 1 with a message naming the first failure.
Stdlib only; CHROMIUM overrides /usr/bin/chromium.
"""
import html.parser
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TIMEOUT_S = 60
WIDTH, HEIGHT = 1280, 2400


class Fail(Exception):
    pass


def chromium(args, url, profile):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-extensions", f"--user-data-dir={profile}", *args, url]
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT_S)
    except FileNotFoundError:
        raise Fail(f"{CHROMIUM} not found: install the Debian package chromium (scripts/deps.sh)")
    except subprocess.TimeoutExpired:
        raise Fail(f"chromium did not finish in {TIMEOUT_S} s: {' '.join(cmd)}")
    if r.returncode != 0:
        tail = r.stderr.decode(errors="replace")[-2000:]
        raise Fail(f"chromium exited with {r.returncode}: {' '.join(cmd)}\n{tail}")
    return r.stdout.decode("utf-8", errors="replace")


class Dom(html.parser.HTMLParser):
    """What the checks need from the dumped DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title, self.in_title = "", False
        self.svgs = 0
        self.keyed = []  # (tag, data-key, data-value or None)
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "title" and not self.svgs:  # <title> inside svg is hover text, not the page's
            self.in_title = True
        if tag == "svg":
            self.svgs += 1
        if "data-key" in a:
            self.keyed.append((tag, a["data-key"], a.get("data-value")))

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        self.text.append(data)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


def ranked_runs(runs):
    """The run at the most workers per (layout, storage, cache): the one the report shows."""
    best = {}
    for r in runs:
        k = (r["layout"], r["storage"], r["cache"])
        if k not in best or (r.get("workers") or 0) > (best[k].get("workers") or 0):
            best[k] = r
    return list(best.values())


def check_dom(dom, c):
    source = c.get("source") or ""
    want = f"dsbench compare: {source}" if source else "dsbench compare"
    if dom.title != want:
        raise Fail(f"title is {dom.title!r}, expected {want!r}")
    if dom.svgs < 2:
        raise Fail(f"{dom.svgs} <svg> elements in the DOM, expected at least 2")
    runs = ranked_runs(c.get("runs") or [])
    if not runs:
        raise Fail("the JSON has no runs")
    bars = [(k, v) for t, k, v in dom.keyed if t == "rect" and k.endswith("/samples_per_sec")]
    if len(bars) != len(runs):
        raise Fail(f"{len(bars)} samples_per_sec bars in the chart, expected one per run ({len(runs)})")
    for r in runs:
        base = f"{r['layout']}/{r['storage']}/{r['cache']}"
        for tag, field in (("rect", "samples_per_sec"), ("td", "samples_per_sec"), ("td", "au"),
                           ("td", "score_min")):
            key = f"{base}/{field}"
            got = [v for t, k, v in dom.keyed if t == tag and k == key]
            if len(got) != 1:
                raise Fail(f"{len(got)} <{tag}> with data-key={key!r}, expected 1")
            want = r.get(field)
            if want is None:
                if got[0] is not None:
                    raise Fail(f"<{tag} data-key={key!r}> has data-value {got[0]!r}; the JSON has null")
                continue
            if got[0] is None:
                raise Fail(f"<{tag} data-key={key!r}> has no data-value; the JSON has {want!r}")
            if not close(float(got[0]), float(want)):
                raise Fail(f"<{tag} data-key={key!r}> data-value={got[0]} but the JSON has {want!r}")
    # Compared without whitespace: the page may set the recommendation's lines as a list.
    rec = c.get("recommendation") or ""
    if rec and "".join(rec.split()) not in "".join("".join(dom.text).split()):
        raise Fail(f"the recommendation {rec!r} is not in the page's text")


def png_chunks(data):
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        yield kind, data[pos + 8:pos + 8 + length]
        pos += 12 + length


def check_png(path):
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise Fail(f"chromium wrote no screenshot at {path}")
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Fail(f"{path} is not a PNG (signature {data[:8]!r})")
    chunks = list(png_chunks(data))
    if not chunks or chunks[0][0] != b"IHDR":
        raise Fail(f"{path}: the first chunk is not IHDR")
    width, height, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    if width != WIDTH:
        raise Fail(f"{path}: width {width}, expected {WIDTH}")
    try:
        raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    except zlib.error as e:
        raise Fail(f"{path}: IDAT does not decompress: {e}")
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour)
    if channels is None or depth != 8:
        raise Fail(f"{path}: unexpected colour type {colour} / bit depth {depth}")
    stride = 1 + width * channels
    if len(raw) != stride * height:
        raise Fail(f"{path}: {len(raw)} bytes of image data, expected {stride * height}")
    # Filtered rows of a blank page are all alike; a rendered report has many distinct rows.
    rows = {raw[i:i + stride] for i in range(0, len(raw), stride)}
    if len(rows) < 50 or len(set(raw)) < 16:
        raise Fail(f"{path} looks blank: {len(rows)} distinct rows, {len(set(raw))} byte values")
    return width, height, len(rows)


def main(argv):
    args = argv[1:]
    keep_png = None
    if "--png" in args:
        i = args.index("--png")
        keep_png = args[i + 1] if i + 1 < len(args) else None
        del args[i:i + 2]
        if keep_png is None:
            raise Fail("--png needs a path")
    if len(args) != 2:
        raise Fail(__doc__.strip().splitlines()[2])
    report, report_json = (os.path.abspath(a) for a in args)
    for p in (report, report_json):
        if not os.path.isfile(p):
            raise Fail(f"{p}: no such file")
    with open(report_json) as f:
        doc = json.load(f)
    c = doc.get("compare", doc) if isinstance(doc, dict) else {}
    url = "file://" + report
    with tempfile.TemporaryDirectory(prefix="check_report.") as tmp:
        dom = Dom()
        dom.feed(chromium(["--dump-dom"], url, os.path.join(tmp, "profile-dom")))
        check_dom(dom, c)
        png = os.path.abspath(keep_png) if keep_png else os.path.join(tmp, "report.png")
        if os.path.exists(png):
            os.remove(png)
        chromium([f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars"],
                 url, os.path.join(tmp, "profile-png"))
        width, height, rows = check_png(png)
    print(f"ok: {report}: title, {dom.svgs} svg, {len(ranked_runs(c['runs']))} runs keyed, "
          f"screenshot {width}x{height} with {rows} distinct rows")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except Fail as e:
        print(f"check_report: {e}", file=sys.stderr)
        sys.exit(1)
