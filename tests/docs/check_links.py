#!/usr/bin/env python3
"""Every link in README.md and docs/*.md stays inside the repository and finds
what it points at (issue 34: pages pointed into ../shared, which a clone does
not have).

Checked, outside fenced code blocks:
- inline links and images `[text](target)` / `![alt](target)`, reference
  definitions `[name]: target`, and HTML `href="..."` / `src="..."`: a relative
  target must be a file or folder of the repository (resolved from the page's
  folder, as GitHub does), and must not leave the repository; an absolute path
  or a file: URL is refused (it names this machine, not the repository);
- a `#anchor`, alone or after a .md target, must be a heading of that page,
  slugged as GitHub does (lowercase; punctuation but `-` and `_` dropped; each
  space a `-`; a repeated slug gains `-1`, `-2`, ...);
- a code span that names a path starting with `../` (pages name files relative
  to the repository's root, so such a path is outside it).
http(s) and mailto links are not fetched.

  check_links.py REPO_ROOT [FILE.md ...]   (default: README.md and docs/*.md)
Exit status 1 names each broken link as PAGE:LINE: TARGET: why.
"""
import pathlib
import re
import sys
import unicodedata
from urllib.parse import unquote

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']*)["']""", re.I)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"""<a\s+(?:name|id)\s*=\s*["']([^"']+)["']""", re.I)


def slug(text):
    """GitHub's heading anchor (github-slugger) for a heading's rendered text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags go
    text = text.replace("`", "")
    out = []
    for ch in text.lower():
        if ch in "-_ " or ch.isalnum():
            out.append(ch)
        elif unicodedata.category(ch).startswith(("L", "N", "M")):
            out.append(ch)
    return "".join(out).replace(" ", "-")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fence = None
    for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        m = re.match(r"^\s*(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * len(m.group(1))
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, line


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            for a in HTML_ANCHOR.findall(line):
                found.add(a)
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            found.add(s if k == 0 else f"{s}-{k}")
        cache[path] = found
    return cache[path]


def check_target(root, page, target):
    """Why `target`, a link on `page`, is broken; None when it is not."""
    if not target or re.match(r"^(https?|mailto):", target, re.I):
        return None
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
        return "a URL of this machine (file:) or an unknown scheme, not a page of the repository"
    path, _, anchor = target.partition("#")
    path = unquote(path)
    if path.startswith("/"):
        return "an absolute path: name the file relative to the page"
    dest = (page.parent / path).resolve() if path else page
    try:
        dest.relative_to(root)
    except ValueError:
        return f"leaves the repository (resolves to {dest})"
    if not dest.exists():
        return f"no such file or folder ({dest.relative_to(root)})"
    if anchor:
        if dest.is_dir() or dest.suffix.lower() != ".md":
            return None  # line anchors of source files (#L10) are GitHub's, not checked
        if unquote(anchor) not in anchors(dest):
            return f"no heading of {dest.relative_to(root)} has the anchor #{anchor}"
    return None


def check_page(root, page):
    bad = []
    for n, line in prose_lines(page):
        spans = [m.group(2).strip() for m in CODE_SPAN.finditer(line)]
        prose = CODE_SPAN.sub("", line)  # a link inside a code span is text, not a link
        targets = INLINE.findall(prose) + HTML.findall(prose)
        m = REFDEF.match(prose)
        if m:
            targets.append(m.group(1))
        for t in targets:
            why = check_target(root, page, t)
            if why:
                bad.append(f"{page.relative_to(root)}:{n}: {t}: {why}")
        for s in spans:
            if s.startswith("../"):
                bad.append(f"{page.relative_to(root)}:{n}: `{s}`: a path outside the repository "
                           "(pages name files from the repository's root)")
    return bad


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    pages = [pathlib.Path(p).resolve() for p in sys.argv[2:]] or \
        [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    bad, links = [], 0
    for page in pages:
        bad += check_page(root, page)
        for _, line in prose_lines(page):
            links += len(INLINE.findall(CODE_SPAN.sub("", line)))
    for b in bad:
        print(b)
    print(f"check_links: {len(pages)} pages, {links} inline links and images, {len(bad)} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
