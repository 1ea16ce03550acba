#!/usr/bin/env python3
"""The man pages against what they describe.

- memshard(1), packaging/memshard.1: every option and subcommand that
  `memshard --help` lists, and each subcommand's --help in turn, is named in
  it, so an option added to the binary without its line here fails.
- memshard.yml(5), packaging/memshard.yml.5: what scripts/gen-man5 makes of
  docs/configuration.md today, so the two cannot drift.
- Both render without a groff warning (and without one from man, if there).

  man_pages_test.py --source SOURCE_DIR --binary path/to/memshard
"""
import argparse
import re
import shutil
import subprocess
import sys
import pathlib

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, file=sys.stderr)


def help_of(binary, words):
    r = subprocess.run([binary, *words, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        fail(f"memshard {' '.join(words)} --help exits {r.returncode}: {r.stderr}")
    return r.stdout


def parse_help(text):
    """CLI11's help: the flags of its Options section, the names of its
    Subcommands section."""
    flags, subcommands, section = [], [], None
    for line in text.splitlines():
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", line):
            section = line[:-1]
            continue
        m = re.match(r"  (\S+)", line)
        if not m:
            continue
        if section == "Options" and m.group(1).startswith("-"):
            # "-c,--conf-file", "--threads", "-v,--verbose"
            flags += [f for f in m.group(1).split(",") if f.startswith("-")]
        elif section == "Subcommands":
            subcommands.append(m.group(1))
    return flags, subcommands


def walk(binary, words=()):
    """(subcommand words, flag) for memshard and each subcommand, and each
    subcommand's words."""
    flags, subs = parse_help(help_of(binary, list(words)))
    if not words and not flags:
        fail("memshard --help lists no options: is its format still CLI11's?")
    found_flags = [(words, f) for f in flags]
    found_subs = []
    for s in subs:
        found_subs.append((*words, s))
        f2, s2 = walk(binary, (*words, s))
        found_flags += f2
        found_subs += s2
    return found_flags, found_subs


def man_text(path):
    """The page's words as a reader sees them: font changes gone, \\- a
    hyphen."""
    text = path.read_text()
    text = re.sub(r"\\f[BIRP]", "", text)
    text = text.replace("\\-", "-").replace("\\&", "")
    # Macro lines: ".B ring load" reads "ring load"; .RB/.IR alternate
    # fonts without spaces, so their words are kept apart by one.
    lines = []
    for line in text.splitlines():
        if line.startswith(".\\\""):
            continue
        if line.startswith("."):
            line = re.sub(r"^\.\w+\s*", "", line).replace('"', "")
        lines.append(line)
    return " ".join(lines)


def check_memshard_1(source, binary):
    page = source / "packaging" / "memshard.1"
    text = man_text(page)
    flags, subcommands = walk(binary)
    for words, flag in flags:
        if flag in ("-h", "--help") and words:
            continue  # every subcommand has it; the page says it once
        if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", text):
            where = "memshard " + " ".join(words) if words else "memshard"
            fail(f"{page}: {flag} (in `{where} --help`) is not in the man page")
    for words in subcommands:
        name = " ".join(words)
        if not re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text):
            fail(f"{page}: the subcommand `memshard {name}` is not in the man page")
    print(f"memshard.1: {len(flags)} options of {len(subcommands) + 1} commands checked")


def check_memshard_yml_5(source):
    r = subprocess.run([sys.executable, str(source / "scripts" / "gen-man5"), "--check"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(r.stderr.strip() or f"scripts/gen-man5 --check exits {r.returncode}")


def check_renders(page):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or r.stderr:
        fail(f"groff on {page}: exit {r.returncode}: {r.stderr.strip()}")
    if shutil.which("man"):
        r = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True, text=True,
                           timeout=60, env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin"})
        if r.returncode != 0 or r.stderr:
            fail(f"man -l {page}: exit {r.returncode}: {r.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, type=pathlib.Path)
    ap.add_argument("--binary", required=True)
    args = ap.parse_args()
    check_memshard_1(args.source, args.binary)
    check_memshard_yml_5(args.source)
    for page in ("memshard.1", "memshard.yml.5"):
        check_renders(args.source / "packaging" / page)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("ok: memshard(1) names every option of --help; memshard.yml(5) is "
          "docs/configuration.md's; both render without warnings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
