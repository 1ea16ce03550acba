<?php
// PHP Memcached (libmemcached underneath) with OPT_BINARY_PROTOCOL against
// 127.0.0.1:PORT: set/get/multi-get/delete/incr/cas/1 MB value. Exits 1
// on the first mismatch, saying what it was.
$port = intval($argv[1]);
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
$m->setOption(Memcached::OPT_COMPRESSION, false);
$m->setOption(Memcached::OPT_CONNECT_TIMEOUT, 3000);
$m->setOption(Memcached::OPT_POLL_TIMEOUT, 3000);
$m->setOption(Memcached::OPT_RECV_TIMEOUT, 3000000);
$m->setOption(Memcached::OPT_SEND_TIMEOUT, 3000000);
$m->addServer("127.0.0.1", $port);

function short($v) {
  return is_string($v) && strlen($v) > 100 ? substr($v, 0, 40) . "..." : $v;
}
function check($what, $got, $want) {
  global $m;
  if ($got === $want) return;
  echo "php-memcached: $what: got ", var_export(short($got), true), ", want ",
    var_export(short($want), true), " (", $m->getResultMessage(), ")\n";
  exit(1);
}

check("set", $m->set("php:k1", "v1"), true);
check("get", $m->get("php:k1"), "v1");
check("get miss", $m->get("php:absent"), false);
check("get miss code", $m->getResultCode(), Memcached::RES_NOTFOUND);
check("add existing", $m->add("php:k1", "x"), false);
check("replace", $m->replace("php:k1", "v1b"), true);
check("append", $m->append("php:k1", "+"), true);
check("prepend", $m->prepend("php:k1", "-"), true);
check("get after append/prepend", $m->get("php:k1"), "-v1b+");

$keys = [];
$want = [];
for ($i = 0; $i < 40; $i++) {
  $keys[] = "php:multi:$i";
  if ($i % 4 != 3) $want["php:multi:$i"] = "m$i";
}
check("setMulti", $m->setMulti($want), true);
$got = $m->getMulti(array_merge($keys, ["php:absent"]));
ksort($got);
ksort($want);
check("getMulti", $got, $want);

check("delete", $m->delete("php:k1"), true);
check("delete miss", $m->delete("php:k1"), false);
check("delete miss code", $m->getResultCode(), Memcached::RES_NOTFOUND);

check("set n", $m->set("php:n", "10"), true);
check("increment", $m->increment("php:n", 5), 15);
check("decrement", $m->decrement("php:n", 20), 0);
check("increment with initial", $m->increment("php:n2", 5, 100), 100);
check("increment again", $m->increment("php:n2", 5, 100), 105);

check("set cas", $m->set("php:cas", "c1"), true);
$r = $m->get("php:cas", null, Memcached::GET_EXTENDED);
check("get extended", $r["value"], "c1");
check("cas stale", $m->cas($r["cas"] + 1, "php:cas", "bad"), false);
check("cas stale code", $m->getResultCode(), Memcached::RES_DATA_EXISTS);
check("cas", $m->cas($r["cas"], "php:cas", "c2"), true);
check("get after cas", $m->get("php:cas"), "c2");

$big = "";
for ($i = 0; $i < 1024 * 1024 - 1024; $i += 1024) $big .= str_repeat(chr(65 + ($i / 1024) % 26), 1024);
check("set 1 MB", $m->set("php:big", $big), true);
check("get 1 MB", $m->get("php:big"), $big);
check("set over 1 MiB", $m->set("php:big", $big . str_repeat("x", 2048)), false);
check("too big code", $m->getResultCode(), Memcached::RES_E2BIG);
check("get after too big", $m->get("php:big"), false);
check("touch", $m->touch("php:cas", 100), true);
echo "php-memcached: all checks passed\n";
