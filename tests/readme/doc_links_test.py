#!/usr/bin/env python3
"""Checks the links of README.md and docs/*.md, so that a renamed page or
heading fails a test instead of a reader.

Every relative link (`[text](path)`, `![alt](path)`, `[text]: path`) must
name a file or folder of the source tree, and every `#anchor`, on this page
or another Markdown page, a heading of that page, by GitHub's rules for a
heading's anchor: lowercase, every character but letters, digits, spaces,
`-` and `_` dropped (backticks and other markup too), each space a `-`,
and a heading whose anchor an earlier one already has takes `-1`, `-2`...
Links with a scheme (https:, mailto:) are not followed. Code blocks and
code spans hold no links.

Usage: doc_links_test.py --source DIR          check the tree
       doc_links_test.py --source DIR FILE...  check these pages only
"""
import argparse
import glob
import os
import re
import sys

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)


def strip_code_blocks(text):
    """The text with fenced code blocks blanked, its lines kept."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
        elif m:
            fence = m.group(1)
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def strip_code(text):
    """The text with code blocks and code spans blanked, its lines kept. A
    code span may run over a line break, never over a blank line."""
    return re.sub(r"(`+)(?:(?!\1)[^\n]|\n(?!\s*\n))*?\1",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), strip_code_blocks(text))


def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(text):
    """Every anchor the headings of a Markdown page give, GitHub's way."""
    found, counts = set(), {}
    lines = strip_code_blocks(text).split("\n")
    for i, line in enumerate(lines):
        m = HEADING.match(line)
        title = m.group(2) if m else None
        if title is None and i + 1 < len(lines) and line.strip() and \
                SETEXT.match(lines[i + 1]) and not line.lstrip().startswith(("|", "-", "*", ">")):
            title = line.strip()
        if title is None:
            continue
        base = slug(title)
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    found.update(HTML_ANCHOR.findall(text))
    return found


def links(text):
    """(line number, target) of every link of a page."""
    bare = strip_code(text)
    out = []
    for m in INLINE_LINK.finditer(bare):
        out.append((bare.count("\n", 0, m.start(1)) + 1, m.group(1)))
    for m in REFERENCE.finditer(bare):
        out.append((bare.count("\n", 0, m.start(1)) + 1, m.group(1)))
    return out


def check(src, page, cache):
    problems = []
    path = os.path.join(src, page)
    with open(path) as f:
        text = f.read()
    for line, target in links(text):
        where = f"{page}:{line}: `{target}`"
        if not target:
            problems.append(f"{where}: an empty link")
            continue
        if SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        if file_part.startswith("/"):
            problems.append(f"{where}: an absolute path; link relative to the page")
            continue
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if os.path.relpath(dest, src).startswith(".."):
            problems.append(f"{where}: points outside the source tree")
            continue
        if not os.path.exists(dest):
            problems.append(f"{where}: {os.path.relpath(dest, src)} does not exist")
            continue
        if not anchor:
            continue
        if not dest.endswith(".md") or not os.path.isfile(dest):
            problems.append(f"{where}: an anchor into {os.path.relpath(dest, src)}, "
                            "which is not a Markdown page")
            continue
        if dest not in cache:
            with open(dest) as f:
                cache[dest] = anchors(f.read())
        if anchor not in cache[dest]:
            near = sorted(a for a in cache[dest] if anchor[:6] in a)[:5]
            hint = f" (near: {', '.join(near)})" if near else ""
            problems.append(f"{where}: {os.path.relpath(dest, src)} has no heading "
                            f"#{anchor}{hint}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("pages", nargs="*")
    args = ap.parse_args()
    src = os.path.abspath(args.source)
    pages = args.pages or (["README.md"] + sorted(
        os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md"))))
    problems, cache, count = [], {}, 0
    for page in pages:
        with open(os.path.join(src, page)) as f:
            count += len(links(f.read()))
        problems += check(src, page, cache)
    if problems:
        print("\n".join(problems))
        print(f"\n{len(problems)} broken link(s) of {count} in {len(pages)} page(s)")
        return 1
    print(f"{count} links in {len(pages)} pages, none broken: {', '.join(pages)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
