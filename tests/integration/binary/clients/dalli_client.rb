#!/usr/bin/ruby
# Dalli 3.0 (binary protocol only) against 127.0.0.1:PORT:
# set/get/multi-get/delete/incr/cas/1 MB value. Exits 1 on the first
# mismatch, saying what it was.
require "dalli"

port = Integer(ARGV[0])
Dalli.logger.level = Logger::ERROR
c = Dalli::Client.new("127.0.0.1:#{port}", socket_timeout: 3, socket_max_failures: 1,
                      compress: false, serializer: Marshal, down_retry_delay: 0)

def short(v)
  v.is_a?(String) && v.bytesize > 100 ? v[0, 40] + "..." : v
end

def check(what, got, want)
  return if got == want
  puts "dalli: #{what}: got #{short(got).inspect}, want #{short(want).inspect}"
  exit 1
end

check("set", c.set("rb:k1", "v1", 0, raw: true).is_a?(Integer), true)
check("get", c.get("rb:k1"), "v1")
check("get miss", c.get("rb:absent"), nil)
check("add existing", c.add("rb:k1", "x", 0, raw: true), false)
check("replace", c.replace("rb:k1", "v1b", 0, raw: true).is_a?(Integer), true)
check("append", c.append("rb:k1", "+"), true)
check("prepend", c.prepend("rb:k1", "-"), true)
check("get after append/prepend", c.get("rb:k1"), "-v1b+")

keys = (0...40).map { |i| "rb:multi:#{i}" }
want = {}
keys.each_with_index do |k, i|
  next if i % 4 == 3
  want[k] = "m#{i}"
  c.set(k, "m#{i}", 0, raw: true)
end
check("get_multi", c.get_multi(*(keys + ["rb:absent"])), want)

check("delete", c.delete("rb:k1"), true)
check("delete miss", c.delete("rb:k1"), nil)
check("get deleted", c.get("rb:k1"), nil)

check("incr creates with default", c.incr("rb:n", 1, 0, 10), 10)
check("incr", c.incr("rb:n", 5), 15)
check("decr", c.decr("rb:n", 20), 0)
check("incr miss without default", c.incr("rb:nothere", 1), nil)

c.set("rb:cas", "c1", 0, raw: true)
check("cas", c.cas("rb:cas", 0, raw: true) { |v| v + "-c2" }.is_a?(Integer), true)
check("get after cas", c.get("rb:cas"), "c1-c2")
value, cas = c.get_cas("rb:cas")
check("get_cas", value, "c1-c2")
check("set_cas stale", c.set_cas("rb:cas", "bad", cas + 1, 0, raw: true), false)
check("set_cas", c.set_cas("rb:cas", "c3", cas, 0, raw: true).is_a?(Integer), true)
check("cas on a miss", c.cas("rb:nocas") { |v| v }, nil)

big = (0...(1024 * 1024 - 1024)).map { |i| ((i * 7) % 251).chr }.join.b
check("set 1 MB", c.set("rb:big", big, 0, raw: true).is_a?(Integer), true)
check("get 1 MB", c.get("rb:big"), big)
check("stats", c.stats.values.first.is_a?(Hash), true)
check("version", c.version.values.first.is_a?(String), true)
puts "dalli: all checks passed"
