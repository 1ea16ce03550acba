#!/usr/bin/env python3
"""Runs the commands README.md and the pages of docs/ give, as written, so
that a renamed script or option, or a tool nothing installs, fails a test
instead of a newcomer.

Every code block of these pages must say what it is: ```sh blocks are
commands, any other language (text, yaml, ...) is not; an indented or
unlabelled block fails the test. Each command of an sh block either runs
here (from the source tree, exit status 0 within a timeout, under
`set -o pipefail` so that a missing tool early in a pipeline shows) or is
listed in skipped.txt with a reason. Each program a command runs must come
from a package that `scripts/install-deps` installs (the demo profile for
what the demo prints) or that Debian always has: a tool that happens to be
on this machine is not enough.

`scripts/demo` is what the other commands are tried against, so it is not
run in turn: it is started first, in the background, on the binary under
test (MEMSHARD_DEMO_BIN, so nothing is rebuilt), the lines it prints for
trying it are run too, and it is stopped at the end. `build/proxy/memshard`
and a bare `memshard` both mean the binary under test. A command that
several pages give runs once, where it is first found (the README first,
then docs/*.md in name order).
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

README = "README.md"
DEMO = "scripts/demo"
DEMO_PORTS = [21211, 21212, 21213, 22122, 22222]
COMMAND_LANGUAGES = {"sh", "bash", "shell"}
COMMAND_TIMEOUT_S = 30
DEMO_START_TIMEOUT_S = 60
PORTS_WAIT_S = 30
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")


def blocks(text):
    """(line number, language, [lines]) of every code block."""
    out, lines, i = [], text.split("\n"), 0
    prev_blank, in_list = True, False
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            indent, fence, lang = len(m.group(1)), m.group(2), m.group(3)
            start, body, i = i + 1, [], i + 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i].lstrip())
                i += 1
            out.append((start, lang, body))
            i += 1
            prev_blank = False
            continue
        if re.match(r"^\s*([-*+]|\d+\.)\s", line):
            in_list = True
        elif not line.startswith(" ") and line.strip():
            in_list = False
        # A list item's continuation is indented too; only outside lists is
        # a 4-space indent after a blank line markdown's code block.
        if prev_blank and not in_list and re.match(r"^( {4}|\t)\S", line):
            start, body = i + 1, []
            while i < len(lines) and (re.match(r"^( {4}|\t)", lines[i]) or not lines[i].strip()):
                body.append(lines[i])
                i += 1
            out.append((start, None, body))
            prev_blank = True
            continue
        prev_blank = not line.strip()
        i += 1
    return out


def commands(body):
    """The commands of an sh block: lines, with backslash continuations joined."""
    out, pending = [], ""
    for line in body:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        cmd = (pending + line).strip()
        pending = ""
        if cmd and not cmd.startswith("#"):
            out.append(cmd)
    return out


def read_skips(path):
    skips, current = {}, None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            if line[0].isspace():
                why = line.strip()
                if current is None or not why.startswith("why:") or not why[4:].strip():
                    sys.exit(f"{path}:{n}: expected an indented `why: reason` after a command")
                skips[current] = why[4:].strip()
                current = None
            else:
                if current is not None:
                    sys.exit(f"{path}:{n}: `{current}` has no `why:` line")
                current = line.rstrip("\n")
    if current is not None:
        sys.exit(f"{path}: `{current}` has no `why:` line")
    return skips


SEPARATORS = {"|", "||", "&&", ";", "&", "(", "<(", "$("}


def programs(cmd):
    """The programs a shell command line runs, `bash -c` strings included."""
    try:
        lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        tokens = list(lex)
    except ValueError:
        return []
    out, at_start = [], True
    for i, tok in enumerate(tokens):
        if tok in SEPARATORS:
            at_start = True
            continue
        if at_start and re.match(r"^\w+=", tok):
            continue  # an assignment before the command
        if at_start:
            out.append(tok)
            if tok == "bash" and i + 2 < len(tokens) and tokens[i + 1] == "-c":
                out += programs(tokens[i + 2])
        at_start = False
    return out


class Provenance:
    """Which Debian package a program comes from, and whether it may be used."""

    def __init__(self, src, env):
        self.env = env
        self.allowed = {}
        for profile in ("demo", "full"):
            listing = subprocess.run([os.path.join(src, "scripts/install-deps"), "--list", profile],
                                     capture_output=True, text=True, check=True)
            self.allowed[profile] = set(listing.stdout.split())

    def _package(self, path):
        candidates = [path, os.path.realpath(path)]
        candidates += [c.replace("/usr/bin/", "/bin/", 1) for c in candidates]
        candidates += [c.replace("/usr/sbin/", "/sbin/", 1) for c in candidates]
        for c in candidates:
            r = subprocess.run(["dpkg-query", "-S", c], capture_output=True, text=True)
            if r.returncode == 0:
                return r.stdout.split(":")[0].strip()
        return None

    def problems(self, cmd, profile):
        out = []
        for prog in programs(cmd):
            if "/" in prog:
                continue  # a script of the tree, or the binary under test
            kind = subprocess.run(["bash", "-c", 'type -t "$1"', "_", prog],
                                  capture_output=True, text=True, env=self.env).stdout.strip()
            if kind in ("builtin", "keyword", "alias", "function"):
                continue
            path = shutil.which(prog, path=self.env["PATH"])
            if path is None:
                out.append(f"`{prog}` is not installed, and scripts/install-deps {profile} "
                           "should install it")
                continue
            if os.path.dirname(path) == self.env["PATH"].split(os.pathsep)[0]:
                continue  # the binary under test, as `memshard`
            pkg = self._package(path)
            if pkg is None:
                out.append(f"`{prog}` ({path}) comes from no Debian package")
                continue
            if pkg in self.allowed[profile]:
                continue
            fields = subprocess.run(["dpkg-query", "-W", "-f=${Essential} ${Priority}", pkg],
                                    capture_output=True, text=True).stdout.split()
            if fields[:1] == ["yes"] or "required" in fields:
                continue
            out.append(f"`{prog}` comes from {pkg}, which `scripts/install-deps {profile}` "
                       "does not install")
        return out


def port_busy(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def run(cmd, src, env, binary):
    cmd = re.sub(r"(?<![\w/.-])build/proxy/memshard(?![\w/.-])", binary, cmd)
    start = time.monotonic()
    p = subprocess.Popen(["bash", "-o", "pipefail", "-c", cmd], cwd=src, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=COMMAND_TIMEOUT_S)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc = f"timeout after {COMMAND_TIMEOUT_S} s"
    return rc, out.decode(errors="replace"), time.monotonic() - start


def start_demo(src, env, binary):
    """The demo process, and the try-it lines it printed once listening."""
    demo_env = dict(env, MEMSHARD_DEMO_BIN=binary)
    p = subprocess.Popen([os.path.join(src, DEMO)], cwd=src, env=demo_env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    lines, ready = [], threading.Event()

    def reader():
        for raw in p.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append(line)
            if line.startswith("Try it"):
                ready.set()
        ready.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    ready.wait(DEMO_START_TIMEOUT_S)
    time.sleep(0.5)  # the try-it lines follow their heading in the same write
    tried = []
    if any(l.startswith("Try it") for l in lines):
        after = lines[[l.startswith("Try it") for l in lines].index(True) + 1:]
        for l in after:
            if not l.startswith("  "):
                break
            tried.append(l.strip())
    p.reader = thread
    return p, tried, lines


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)  # memcached servers that outlived the script
    except ProcessLookupError:
        pass
    p.wait()
    p.reader.join(5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--skip", required=True)
    args = ap.parse_args()
    src, binary = os.path.abspath(args.source), os.path.abspath(args.binary)
    pages = [README] + sorted(os.path.relpath(p, src)
                              for p in glob.glob(os.path.join(src, "docs", "*.md")))
    skips = read_skips(args.skip)
    failures = []

    to_run, seen, readme_commands = [], set(), set()
    for page in pages:
        with open(os.path.join(src, page)) as f:
            found = blocks(f.read())
        for line, lang, body in found:
            if lang is None or lang == "":
                failures.append(f"{page}:{line}: a code block without a language; fence it as "
                                "```sh (commands, run by this test) or ```text (not commands)")
                continue
            if lang not in COMMAND_LANGUAGES:
                continue
            for cmd in commands(body):
                if page == README:
                    readme_commands.add(cmd)
                if cmd in seen:
                    continue  # run once, where it was first found
                seen.add(cmd)
                if cmd == DEMO or cmd in skips:
                    continue
                to_run.append((f"{page}:{line}", cmd))
    if DEMO not in readme_commands:
        failures.append(f"{README} has no `{DEMO}` command: the other commands are tried on it")
    for cmd in skips:
        if cmd not in seen:
            failures.append(f"{args.skip}: `{cmd}` is no longer a command of {README} or "
                            "docs/; remove it")
    if failures:
        print("\n".join(failures))
        return 1

    # Another checkout's run of this test (or a demo) may hold the ports a
    # little while; the README's commands name them, so they cannot move.
    deadline = time.monotonic() + PORTS_WAIT_S
    while (busy := [p for p in DEMO_PORTS if port_busy(p)]) and time.monotonic() < deadline:
        time.sleep(1)
    if busy:
        print(f"ports {busy} on 127.0.0.1 are taken (a demo running?); the demo needs them")
        return 1

    with tempfile.TemporaryDirectory(prefix="readme-test-") as tmp:
        os.symlink(binary, os.path.join(tmp, "memshard"))
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", ""))
        provenance = Provenance(src, env) if shutil.which("dpkg-query") else None
        demo, tried, demo_lines = start_demo(src, env, binary)
        try:
            if not tried:
                failures.append(f"`{DEMO}` printed no try-it lines within "
                                f"{DEMO_START_TIMEOUT_S} s:\n  " + "\n  ".join(demo_lines[-20:]))
            else:
                work = [(f"{DEMO} printed", "demo", c) for c in tried]
                work += [(where, "full", c) for where, c in to_run]
                for where, profile, cmd in work:
                    if provenance:
                        failures += [f"{where}: {p}" for p in provenance.problems(cmd, profile)]
                    rc, out, took = run(cmd, src, env, binary)
                    status = "ok" if rc == 0 else f"FAILED ({rc})"
                    print(f"{status:>10} {took:5.1f} s  {where}: {cmd}")
                    if rc != 0:
                        failures.append(f"{where}: `{cmd}` exited {rc}:\n    " +
                                        "\n    ".join(out.strip().split("\n")[-15:]))
            for cmd in [DEMO] + sorted(skips):
                why = skips.get(cmd, "started first, in the background, on the binary under test")
                print(f"{'skipped':>10}          {cmd}  ({why})")
        finally:
            stop(demo)
    if failures:
        print("\n" + "\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
