// Classic text-protocol commands. Expected replies: memcached 1.6.18 (see
// request_test_util.h).
#include <string>

#include "tests/proxy/protocol/request_test_util.h"

namespace memshard::proto {
namespace {

const std::string kMaxKey(250, 'y');

std::string with_key(std::string_view before, const std::string& key, std::string_view after) {
  return std::string(before) + key + std::string(after);
}

using Unknown = RequestTest;

TEST_F(Unknown, CommandsAndNonCommandsAnswerError) {
  for (std::string_view line :
       {"foo", "", "   ", "g", "\r", "Get a", "GET a", "get\tk", "mx", "m", "set\tk 0 0 1"}) {
    expect_answer(line, kError);
  }
}

// memcached 1.6.18 (proto_text.c) closes without a word an unknown command
// whose last token starts with "HTTP/": an HTTP request line.
TEST_F(Unknown, AnHttpRequestLineCloses) {
  for (std::string_view line : {"GET / HTTP/1.1", "POST /x HTTP/1.1", "PUT /a/b HTTP/1.0",
                                "OPTIONS * HTTP/2", "HTTP/1.1", "GET  /  HTTP/1.1  "}) {
    const Request& r = parse(line);
    EXPECT_EQ(r.action, Action::close) << line;
    EXPECT_TRUE(r.foreign) << line;
    EXPECT_EQ(r.error_reply, "") << line;
  }
}

TEST_F(Unknown, AKnownCommandOrAnotherLastTokenIsNoHttpRequest) {
  // get is known: "/" and "HTTP/1.1" are its keys, as memcached reads them.
  EXPECT_EQ(parse("get / HTTP/1.1").action, Action::multi_get);
  EXPECT_FALSE(parse("get / HTTP/1.1").foreign);
  expect_answer("GET / http/1.1", kError);
  expect_answer("GET /HTTP/1.1 x", kError);
  expect_answer("H", kError);  // shorter than any command: ERROR before anything else
}

TEST_F(Unknown, AdministrationCommandsAreNotProxied) {
  // A deliberate difference: memcached answers these (e.g. "watch" -> OK,
  // "shutdown" -> "ERROR: shutdown not enabled"); they concern one server,
  // so the proxy treats them as unknown.
  for (std::string_view line : {"shutdown", "slabs automove 1", "lru_crawler enable", "watch",
                                "lru mode flat", "cache_memlimit 100", "extstore x y"}) {
    expect_answer(line, kError);
  }
}

TEST_F(Unknown, ANulByteEndsTheLine) {
  // memcached reads the line as a C string: "set k\0 0 0 1" is "set k".
  expect_answer(std::string_view("set k\0 0 0 1", 12), kError);
}

using Retrieval = RequestTest;

TEST_F(Retrieval, GetIsAMultiGetEvenWithOneKey) {
  const Request& r = parse("get a");
  EXPECT_EQ(r.command, Command::get);
  EXPECT_EQ(r.action, Action::multi_get);
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(r.keys[0], "a");
}

TEST_F(Retrieval, KeysSplitOnSpacesOnly) {
  const Request& r = parse("   gets   a b\tc  d\r ");
  EXPECT_EQ(r.command, Command::gets);
  EXPECT_EQ(r.action, Action::multi_get);
  ASSERT_EQ(r.keys.size(), 3u);
  EXPECT_EQ(r.keys[0], "a");
  EXPECT_EQ(r.keys[1], "b\tc");
  EXPECT_EQ(r.keys[2], "d\r");
}

TEST_F(Retrieval, KeysAfterANulAreNotRead) {
  // 1.6.18 answers one VALUE to "get a\0 a".
  const Request& r = parse(std::string_view("get a\0 b", 8));
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(r.keys[0], "a");
}

TEST_F(Retrieval, ManyKeysBeyondTheTokenLimit) {
  std::string line = "get";
  for (int i = 0; i < 100; ++i) line += " k" + std::to_string(i);
  const Request& r = parse(line);
  ASSERT_EQ(r.keys.size(), 100u);
  EXPECT_EQ(r.keys[99], "k99");
}

TEST_F(Retrieval, LongestKey) {
  const std::string line = "get " + kMaxKey;
  EXPECT_EQ(parse(line).action, Action::multi_get);
}

TEST_F(Retrieval, GatCarriesTheExptime) {
  const Request& r = parse("gat 10 a b");
  EXPECT_EQ(r.command, Command::gat);
  EXPECT_EQ(r.action, Action::multi_get);
  EXPECT_EQ(r.exptime, "10");
  ASSERT_EQ(r.keys.size(), 2u);
  EXPECT_EQ(r.keys[1], "b");
  EXPECT_EQ(parse("gats -5 a").command, Command::gats);
  EXPECT_EQ(parse("gats -5 a").exptime, "-5");
  EXPECT_EQ(parse("gat 99999999999 zz").action, Action::multi_get);  // truncated, accepted
}

TEST_F(Retrieval, BgetIsGet) {
  const Request& r = parse("bget a");
  EXPECT_EQ(r.command, Command::get);
  EXPECT_EQ(r.action, Action::multi_get);
}

TEST_F(Retrieval, Errors) {
  for (std::string_view line : {"get", "gets", "gat", "gats", "bget", "  get  "}) {
    expect_answer(line, kError);
  }
  expect_answer("gat 10", "END\r\n");  // no key: an empty result
  expect_answer("gat abc k", "CLIENT_ERROR invalid exptime argument\r\n");
  expect_answer("gat 99999999999999999999 zz", "CLIENT_ERROR invalid exptime argument\r\n");
  // A long key anywhere fails the whole request (1.6.18 drops the values
  // it found for the keys before it).
  expect_answer(with_key("get a ", kLongKey, " a"), kBadFormat);
  expect_answer(with_key("get ", kLongKey, ""), kBadFormat);
  expect_answer(with_key("gat 10 ", kLongKey, ""), kBadFormat);
  expect_answer(with_key("gat abc ", kLongKey, ""), "CLIENT_ERROR invalid exptime argument\r\n");
}

using Storage = RequestTest;

TEST_F(Storage, EveryStorageCommand) {
  expect_forward("set k 0 0 5", Command::set, "k", 7);
  expect_forward("add k 1 2 0", Command::add, "k", 2);
  expect_forward("replace k 0 0 1", Command::replace, "k", 3);
  expect_forward("append k 0 0 1", Command::append, "k", 3);
  expect_forward("prepend k 0 0 1", Command::prepend, "k", 3);
  expect_forward("cas k 0 0 1 5", Command::cas, "k", 3);
  expect_forward(with_key("set ", kMaxKey, " 0 0 1"), Command::set, kMaxKey, 3);
}

TEST_F(Storage, Noreply) {
  expect_forward("set k 0 0 2 noreply", Command::set, "k", 4, true);
  expect_forward("cas k 0 0 1 1 noreply", Command::cas, "k", 3, true);
  // Another last token is ignored (1.6.18 answers STORED / EXISTS).
  expect_forward("set k 0 0 2 garbage", Command::set, "k", 4, false);
  expect_forward("cas k 0 0 1 1 zz", Command::cas, "k", 3, false);
}

TEST_F(Storage, NumbersAsMemcachedReadsThem) {
  // All STORED by 1.6.18, with these value lengths.
  expect_forward("set k 0 0 4294967297", Command::set, "k", 1 + 2);
  expect_forward("set k 0 0 -4294967294", Command::set, "k", 2 + 2);
  expect_forward("set k 0 0 \t2", Command::set, "k", 2 + 2);
  expect_forward("set k 0 0 2\tzz", Command::set, "k", 2 + 2);
  expect_forward("set k 0 0 +2", Command::set, "k", 2 + 2);
  expect_forward("set k -0 0 2", Command::set, "k", 2 + 2);
  expect_forward("set k 4294967296 0 1", Command::set, "k", 1 + 2);
  expect_forward("set k 0 99999999999 2", Command::set, "k", 2 + 2);
}

TEST_F(Storage, WrongArityIsError) {
  for (std::string_view line :
       {"set", "set k", "set k 0 0", "set k 0 0 2 noreply x", "replace", "append k", "prepend k 0",
        "add k 0 0", "cas k 0 0 1", "cas k 0 0 1 1 noreply z"}) {
    expect_answer(line, kError);
  }
}

TEST_F(Storage, BadNumbersAndKeys) {
  for (std::string_view line :
       {"set k 0 0 -1", "set k -1 0 2", "set k 0 x 2", "set k 0 0 2x", "set k 0 0 x",
        "cas k 0 0 1 x", "cas k 0 0 1 -1", "set k 0 0 2147483646", "set k 0 0 2147483647",
        "set k 0 0 2147483648", "set k 0 0 9223372036854775807", "set k 0 0 9223372036854775808"}) {
    expect_answer(line, kBadFormat);  // no swallow: the data is read as a command
  }
  expect_answer(with_key("set ", kLongKey, " 0 0 1"), kBadFormat);
}

TEST_F(Storage, NoreplySilencesErrors) {
  // 1.6.18 answers nothing to the line itself (then reads the data line as
  // a command: "ERROR").
  expect_answer(with_key("set ", kLongKey, " 0 0 1 noreply"), "");
  EXPECT_TRUE(request_.quiet);
  expect_answer("set k 0 0 noreply", "");  // "noreply" is the length token
  EXPECT_TRUE(request_.quiet);
  expect_answer("cas k 0 0 1 x noreply", "");
}

TEST_F(Storage, TooLargeIsSwallowed) {
  expect_answer("set k 0 0 2000000", kTooLarge, 2000002);
  expect_answer("set k 0 0 2000000 noreply", "", 2000002);  // silent, still swallowed
  expect_answer("cas k 0 0 1048577 1", kTooLarge, 1048579);
  expect_forward("set k 0 0 1048576", Command::set, "k", 1048578);  // the proxy's bound
  limits_.item_size_max = 100;
  expect_forward("set k 0 0 100", Command::set, "k", 102);
  expect_answer("set k 0 0 101", kTooLarge, 103);
  // Format errors come first: no swallow.
  expect_answer("set k x 0 2000000", kBadFormat);
}

using Delete = RequestTest;

TEST_F(Delete, Forms) {
  expect_forward("delete k", Command::delete_, "k");
  expect_forward("delete k 0", Command::delete_, "k");
  expect_forward("delete k noreply", Command::delete_, "k", 0, true);
  expect_forward("delete k 0 noreply", Command::delete_, "k", 0, true);
  expect_forward("delete noreply", Command::delete_, "noreply", 0, false);  // the key
}

TEST_F(Delete, Errors) {
  const std::string_view usage =
      "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n";
  expect_answer("delete", kError);
  expect_answer("delete k 0 0 0", kError);
  expect_answer("delete k 1", usage);
  expect_answer("delete k 0 x", usage);
  expect_answer("delete k 1 noreply", "");
  expect_answer("delete k noreply noreply", "");
  expect_answer(with_key("delete ", kLongKey, ""), kBadFormat);
  expect_answer(with_key("delete ", kLongKey, " noreply"), "");
}

TEST_F(Delete, TooManyTokens) {
  std::string line = "delete k";
  for (int i = 0; i < 30; ++i) line += " 0";
  expect_answer(line, kError);
}

using Arithmetic = RequestTest;

TEST_F(Arithmetic, IncrDecr) {
  expect_forward("incr k 1", Command::incr, "k");
  expect_forward("decr k 18446744073709551615", Command::decr, "k");
  expect_forward("incr k 1 noreply", Command::incr, "k", 0, true);
  expect_forward("incr k 1 x", Command::incr, "k", 0, false);  // ignored token
}

TEST_F(Arithmetic, Errors) {
  const std::string_view bad_delta = "CLIENT_ERROR invalid numeric delta argument\r\n";
  for (std::string_view line : {"incr", "incr k", "decr k", "incr k 1 x y"}) {
    expect_answer(line, kError);
  }
  expect_answer("incr k x", bad_delta);
  expect_answer("incr k -1", bad_delta);
  expect_answer("decr k 18446744073709551616", bad_delta);
  expect_answer("incr k noreply", "");
  expect_answer(with_key("incr ", kLongKey, " 1"), kBadFormat);
  expect_answer(with_key("incr ", kLongKey, " 1 noreply"), "");
}

using Touch = RequestTest;

TEST_F(Touch, Forms) {
  expect_forward("touch k 10", Command::touch, "k");
  expect_forward("touch k 10 x", Command::touch, "k");
  expect_forward("touch k -1 noreply", Command::touch, "k", 0, true);
}

TEST_F(Touch, Errors) {
  expect_answer("touch k", kError);
  expect_answer("touch k 1 2 3", kError);
  expect_answer("touch k x", "CLIENT_ERROR invalid exptime argument\r\n");
  expect_answer("touch k x noreply", "");
  expect_answer(with_key("touch ", kLongKey, " 1"), kBadFormat);
}

using Local = RequestTest;

TEST_F(Local, Commands) {
  for (std::string_view line :
       {"version", "version x y", "quit", "quit x", "stats", "mn", "mn foo"}) {
    EXPECT_EQ(parse(line).action, Action::local) << line;
  }
  EXPECT_EQ(parse("quit").command, Command::quit);
  EXPECT_EQ(parse("mn").command, Command::meta_noop);
  const Request& r = parse("stats  slabs x");
  EXPECT_EQ(r.command, Command::stats);
  ASSERT_EQ(r.args.size(), 2u);
  EXPECT_EQ(r.args[0], "slabs");
  EXPECT_EQ(r.args[1], "x");
}

TEST_F(Local, Verbosity) {
  const Request& r = parse("verbosity 1");
  EXPECT_EQ(r.action, Action::local);
  EXPECT_EQ(r.command, Command::verbosity);
  ASSERT_EQ(r.args.size(), 1u);
  EXPECT_EQ(r.args[0], "1");
  EXPECT_FALSE(r.quiet);
  EXPECT_TRUE(parse("verbosity 1 noreply").quiet);
  EXPECT_EQ(parse("verbosity 0 x").action, Action::local);  // 1.6.18: OK
}

TEST_F(Local, VerbosityErrors) {
  expect_answer("verbosity", kError);
  expect_answer("verbosity 1 x y", kError);
  expect_answer("verbosity x", kBadFormat);
  expect_answer("verbosity -1", kBadFormat);
  expect_answer("verbosity noreply", "");
}

using FlushAll = RequestTest;

TEST_F(FlushAll, Forms) {
  for (std::string_view line : {"flush_all", "flush_all 0", "flush_all -1", "flush_all 0 x"}) {
    EXPECT_EQ(parse(line).action, Action::broadcast) << line;
    EXPECT_FALSE(request_.quiet);
  }
  for (std::string_view line : {"flush_all noreply", "flush_all 10 noreply"}) {
    EXPECT_EQ(parse(line).action, Action::broadcast) << line;
    EXPECT_TRUE(request_.quiet);
  }
}

TEST_F(FlushAll, Errors) {
  const std::string_view bad_exptime = "CLIENT_ERROR invalid exptime argument\r\n";
  expect_answer("flush_all x", bad_exptime);
  expect_answer("flush_all noreply 0", bad_exptime);  // noreply must be last
  expect_answer("flush_all x noreply", "");
  expect_answer("flush_all 0 0 0", kError);
}

TEST_F(RequestTest, ReuseKeepsCapacity) {
  std::string line = "get";
  for (int i = 0; i < 50; ++i) line += " k" + std::to_string(i);
  parse(line);
  const size_t capacity = request_.keys.capacity();
  parse("delete k");
  EXPECT_EQ(request_.keys.size(), 1u);
  EXPECT_EQ(request_.keys.capacity(), capacity);
  EXPECT_EQ(request_.data_bytes, 0u);
  EXPECT_TRUE(request_.exptime.empty());
}

}  // namespace
}  // namespace memshard::proto
