#!/usr/bin/python3
# python-binary-memcached (bmemcached: pure Python, binary protocol only)
# against 127.0.0.1:PORT: set/get/multi-get/delete/incr/cas/1 MB value.
# Exits 1 on the first mismatch, saying what it was.
import random
import sys

import bmemcached

port = int(sys.argv[1])
c = bmemcached.Client(("127.0.0.1:%d" % port,), socket_timeout=3)


def short(v):
    return v[:40] + b"..." if isinstance(v, bytes) and len(v) > 100 else v


def check(what, got, want):
    if got != want:
        print("bmemcached: %s: got %r, want %r" % (what, short(got), short(want)))
        sys.exit(1)


check("set", c.set("bm:k1", b"v1"), True)
check("get", c.get("bm:k1"), b"v1")
check("get miss", c.get("bm:absent"), None)
check("add existing", c.add("bm:k1", b"x"), False)
check("replace", c.replace("bm:k1", b"v1b"), True)
check("replace miss", c.replace("bm:absent", b"x"), False)
check("get after replace", c.get("bm:k1"), b"v1b")

keys = ["bm:multi:%d" % i for i in range(40)]
want = {k: ("m%d" % i).encode() for i, k in enumerate(keys) if i % 4 != 3}
check("set_multi (the keys that failed)", c.set_multi(want), [])
check("get_multi", c.get_multi(keys + ["bm:absent"]), want)

check("delete", c.delete("bm:k1"), True)
check("delete miss (bmemcached says True)", c.delete("bm:k1"), True)
check("get deleted", c.get("bm:k1"), None)

c.set("bm:n", 10)
check("incr", c.incr("bm:n", 5), 15)
check("decr", c.decr("bm:n", 20), 0)

c.set("bm:cas", b"c1")
value, cas = c.gets("bm:cas")
check("gets", value, b"c1")
check("cas stale", c.cas("bm:cas", b"bad", cas + 1), False)
check("cas", c.cas("bm:cas", b"c2", cas), True)
check("cas again", c.cas("bm:cas", b"c3", cas), False)
check("get after cas", c.get("bm:cas"), b"c2")

# Incompressible (bmemcached compresses what zlib shrinks): 1 MiB really
# travels.
big = random.Random(22).randbytes(1024 * 1024 - 1024)
check("set 1 MB", c.set("bm:big", big), True)
check("get 1 MB", c.get("bm:big"), big)
try:
    c.set("bm:big", random.Random(23).randbytes(1024 * 1024 + 2048))
    status = "stored"
except bmemcached.exceptions.MemcachedException as e:
    status = e.code
check("set over 1 MiB: status", status, 3)
check("get after too big", c.get("bm:big"), None)
check("stats", len(c.stats()) > 0, True)
print("bmemcached: all checks passed")
