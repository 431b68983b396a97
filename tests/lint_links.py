#!/usr/bin/python3
"""lint_links.py [REPO]: every relative link in the repository's Markdown resolves, and so does
every docs/...md reference in code and scripts.

- In each *.md: inline links and images `[text](target)`, reference definitions `[x]: target`
  and HTML `href="target"`, outside code spans and fenced blocks. A target with a scheme
  (https:, mailto:) is not checked; a relative one must name an existing file or folder, and its
  #anchor (or a bare #anchor, in the same file) must be a heading's GitHub anchor or an explicit
  `id="..."` / `name="..."` in the target file.
- In *.cc, *.h, *.sh, *.py and CMakeLists.txt, and in Markdown prose outside links: each
  `docs/<path>.md` or `docs/<path>.md#anchor` (brace lists such as docs/formats/{wds,lmdb}.md
  expanded), relative to the repository root.

GitHub's anchors (github-slugger): the heading's rendered text, lowercased; characters other
than letters, digits, '-', '_' and spaces removed; each space becomes '-'; a repeated anchor in
one file gets -1, -2, ... Exit 0 if all resolve, 1 listing each broken one as FILE:LINE: what.
"""
import os, re, subprocess, sys

CODE_NAMES = re.compile(r"(\.(cc|h|sh|py)|(^|/)CMakeLists\.txt)$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
EXPLICIT_ID = re.compile(r"""<[A-Za-z][^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$")
HREF = re.compile(r"""\bhref\s*=\s*["']([^"']+)["']""")
CODE_REF = re.compile(r"docs/[A-Za-z0-9_{}-][A-Za-z0-9_./{},-]*?\.md(?:#[A-Za-z0-9_-]+)?")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def repo_files(root):
    """Tracked and untracked-but-not-ignored files; without git, every file outside build*/."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
        return sorted({p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(root, p))})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".git", "build"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return sorted(files)


def heading_text(raw):
    """The text a heading renders to, roughly: links to their text, code and emphasis marks gone."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    t = re.sub(r"<[^>]+>", "", t)
    t = t.replace("`", "").replace("*", "")
    return re.sub(r"(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])", "", t)


def slug(text):
    return re.sub(r"[^\w\- ]", "", text.lower(), flags=re.UNICODE).replace(" ", "-")


def markdown_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * len(m.group(1))
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, line


def anchors_of(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found, seen, prev = set(), {}, ""
        for _, line in markdown_lines(text):
            m = HEADING.match(line)
            s = SETEXT.match(line)
            title = m.group(2) if m else prev.strip() if s and prev.strip() and not HEADING.match(prev) else None
            if title is not None:
                base = slug(heading_text(title))
                k = seen.get(base, 0)
                seen[base] = k + 1
                found.add(base if k == 0 else f"{base}-{k}")
            found.update(EXPLICIT_ID.findall(line))
            prev = line
        cache[path] = found
    return cache[path]


def check_target(root, src_dir, target, where, errors, md_self=None):
    path, _, anchor = target.partition("#")
    if path:
        full = os.path.normpath(os.path.join(root, path.lstrip("/")) if path.startswith("/")
                                else os.path.join(src_dir, path))
        if not os.path.exists(full):
            errors.append(f"{where}: {target}: no such file {os.path.relpath(full, root)}")
            return
    else:
        full = md_self
    if anchor and full and full.endswith(".md") and anchor not in anchors_of(full):
        errors.append(f"{where}: {target}: no anchor #{anchor} in {os.path.relpath(full, root)}")


def expand_braces(ref):
    m = re.search(r"\{([^{}]*)\}", ref)
    if not m:
        return [ref]
    return [x for alt in m.group(1).split(",") for x in expand_braces(ref[:m.start()] + alt + ref[m.end():])]


def check_code_refs(root, rel, n, line, errors):
    """docs/...md[#anchor] named in text (a comment, a script, Markdown prose), from the root."""
    count = 0
    for ref in CODE_REF.findall(line):
        for t in expand_braces(ref):
            count += 1
            check_target(root, root, t, f"{rel}:{n}", errors)
    return count


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    errors, links = [], 0
    for rel in repo_files(root):
        full = os.path.join(root, rel)
        if rel.endswith(".md"):
            with open(full, encoding="utf-8") as f:
                text = f.read()
            for n, line in markdown_lines(text):
                line = CODE_SPAN.sub("", line)
                targets = INLINE_LINK.findall(line) + HREF.findall(line)
                m = REF_DEF.match(line)
                if m:
                    targets.append(m.group(1))
                for t in targets:
                    if not t or SCHEME.match(t):
                        continue
                    links += 1
                    check_target(root, os.path.dirname(full), t, f"{rel}:{n}", errors, md_self=full)
                links += check_code_refs(root, rel, n, re.sub(r"\]\([^)]*\)", "]", line), errors)
        elif CODE_NAMES.search(rel):
            try:
                with open(full, encoding="utf-8") as f:
                    text = f.read()
            except UnicodeDecodeError:
                continue
            for n, line in enumerate(text.split("\n"), 1):
                links += check_code_refs(root, rel, n, line, errors)
    for e in errors:
        print(e)
    print(f"lint_links: {links} links checked, {len(errors)} broken")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
