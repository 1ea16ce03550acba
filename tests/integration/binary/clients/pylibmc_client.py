#!/usr/bin/python3
# pylibmc (libmemcached underneath) with binary=True against 127.0.0.1:PORT:
# set/get/multi-get/delete/incr/cas/1 MB value. Exits 1 on the first
# mismatch, saying what it was.
import random
import sys

import pylibmc

port = int(sys.argv[1])
c = pylibmc.Client(["127.0.0.1:%d" % port], binary=True,
                   behaviors={"cas": True, "tcp_nodelay": True, "connect_timeout": 3000,
                              "_poll_timeout": 3000, "receive_timeout": 3000000,
                              "send_timeout": 3000000})


def check(what, got, want):
    if got != want:
        print("pylibmc: %s: got %r, want %r" % (what, got if not isinstance(got, bytes) or len(got) < 100 else got[:40] + b"...", want if not isinstance(want, bytes) or len(want) < 100 else want[:40] + b"..."))
        sys.exit(1)


check("set", c.set("py:k1", b"v1"), True)
check("get", c.get("py:k1"), b"v1")
check("get miss", c.get("py:absent"), None)
check("add existing", c.add("py:k1", b"x"), False)
check("replace", c.replace("py:k1", b"v1b"), True)
check("append", c.append("py:k1", b"+"), True)
check("prepend", c.prepend("py:k1", b"-"), True)
check("get after append/prepend", c.get("py:k1"), b"-v1b+")

keys = ["py:multi:%d" % i for i in range(40)]
c.set_multi({k: ("m%d" % i).encode() for i, k in enumerate(keys) if i % 4 != 3})
want = {k: ("m%d" % i).encode() for i, k in enumerate(keys) if i % 4 != 3}
check("get_multi", c.get_multi(keys + ["py:absent"]), want)

check("delete", c.delete("py:k1"), True)
check("delete miss", c.delete("py:k1"), False)
check("get deleted", c.get("py:k1"), None)

c.set("py:n", 10)
check("incr", c.incr("py:n", 5), 15)
check("decr", c.decr("py:n", 20), 0)
try:
    c.incr("py:nothere", 1)
    check("incr miss raises", "no exception", "NotFound")
except pylibmc.NotFound:
    pass

c.set("py:cas", b"c1")
value, cas = c.gets("py:cas")
check("gets", value, b"c1")
check("cas stale", c.cas("py:cas", b"bad", cas + 1), False)
check("cas", c.cas("py:cas", b"c2", cas), True)
check("cas again", c.cas("py:cas", b"c3", cas), False)
check("get after cas", c.get("py:cas"), b"c2")

# Incompressible (bmemcached compresses what zlib shrinks): 1 MiB really
# travels.
big = random.Random(22).randbytes(1024 * 1024 - 1024)
check("set 1 MB", c.set("py:big", big, min_compress_len=0), True)
check("get 1 MB", c.get("py:big"), big)
try:
    ok = c.set("py:big", big + b"x" * 2048)
except pylibmc.TooBig:
    ok = "TooBig"
check("set over 1 MiB", ok, "TooBig")
check("get after too big", c.get("py:big"), None)
check("still works", c.set("py:after", b"a"), True)
print("pylibmc: all checks passed")
