// A backend that is not a memcached server: a tiny fake (a listener thread
// in the test) answers memshard's requests with garbage, closes in the
// middle of a reply, passes a SERVER_ERROR, or sends bytes after a good
// reply. Only the requests on that connection may fail: the real servers'
// keys are answered, in order, and memshard keeps running. Each case runs
// for a text, a meta and a binary client (protocol_client.h), with the cases
// memcached's own proxy tests (t/proxyunits.t) try: an error passed through
// on a kept connection, a garbage line, an impossible length, a VALUE
// without END, trailing data after a reply.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "failure_util.h"
#include "protocol_client.h"

namespace memshard::testing::failures {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kInvalid = "SERVER_ERROR backend sent an invalid reply";
constexpr std::string_view kClosed = "SERVER_ERROR backend closed the connection";
// What memcached says when a store finds no memory: passed through.
constexpr std::string_view kPassed = "SERVER_ERROR out of memory storing object";
// Trailing data after a whole reply (proxyunits.t's "trailingdata").
constexpr std::string_view kStray = "garbage";

// What a client gets for a request that reached the fake.
enum class Outcome {
  invalid,         // kInvalid, and memshard replaces the connection
  closed,          // kClosed (the fake closed it)
  passed_through,  // the fake's SERVER_ERROR line, on a connection memshard keeps
  answered,        // memcached's answer for a key it does not hold (a miss,
                   // not found, stored); the stray bytes after it cost the
                   // connection, not that answer
};

// What the fake does once it has answered a request.
enum class Then { next, close, linger, flood };

struct Garbage {
  const char* name;
  // The fake's answer to one request memshard forwarded (its "mn", the end
  // marker memshard sends after a quiet request, is answered MN).
  std::string (*reply)(const FakeRequest& r);
  Then then;
  Outcome outcome;
  // Sent as soon as memshard connects, before any request.
  const char* greeting = "";
};

bool is_meta(const FakeRequest& r) {
  const std::string v = r.verb();
  return v == "mg" || v == "ms" || v == "md" || v == "ma";
}

// The O flag a meta request carries, echoed as memcached echoes it.
std::string echo(const FakeRequest& r) {
  const std::string o = r.flag('O');
  return o.empty() ? "" : " " + o;
}

// The line that announces `bytes` of value: VA for a meta request, VALUE
// (with a cas for gets) for a classic one.
std::string value_line(const FakeRequest& r, uint64_t bytes) {
  if (is_meta(r)) return "VA " + std::to_string(bytes) + echo(r) + "\r\n";
  return "VALUE " + r.key() + " 0 " + std::to_string(bytes) + (r.verb() == "gets" ? " 1" : "") +
         "\r\n";
}

// memcached's answer to a request for keys it does not hold.
std::string absent(const FakeRequest& r) {
  const std::string v = r.verb();
  if (v == "get" || v == "gets") return "END\r\n";
  if (v == "mg") return r.has("q") ? "" : "EN" + echo(r) + "\r\n";
  if (v == "ms") return r.has("q") ? "" : "HD" + echo(r) + "\r\n";
  if (v == "md" || v == "ma") return "NF" + echo(r) + "\r\n";  // q hides HD, not NF
  if (v == "set") return r.has("noreply") ? "" : "STORED\r\n";
  return "NOT_FOUND\r\n";
}

const Garbage kGarbage[] = {
    {"ServerErrorPassedThrough", [](const FakeRequest&) { return std::string(kPassed) + "\r\n"; },
     Then::next, Outcome::passed_through},
    {"HelloWorld", [](const FakeRequest&) { return std::string("HELLO WORLD\r\n"); }, Then::next,
     Outcome::invalid},
    {"UnknownMetaCode", [](const FakeRequest& r) { return "ZZ" + echo(r) + "\r\n"; }, Then::next,
     Outcome::invalid},
    {"CloseMidValue", [](const FakeRequest& r) { return value_line(r, 100) + "abc"; }, Then::close,
     Outcome::closed},
    {"CloseWithoutAnswer", [](const FakeRequest&) { return std::string(); }, Then::close,
     Outcome::closed},
    {"ValueForAKeyNotAsked",
     [](const FakeRequest&) { return std::string("VALUE not-asked 0 1\r\nx\r\nEND\r\n"); },
     Then::next, Outcome::invalid},
    // Another reply's line where END belongs (for a meta request, a VALUE
    // is wrong already).
    {"ValueWithoutEnd",
     [](const FakeRequest& r) { return "VALUE " + r.key() + " 0 2\r\nok\r\nHD\r\n"; }, Then::next,
     Outcome::invalid},
    {"LineWithoutEndPast8KiB", [](const FakeRequest&) { return std::string(20000, 'x'); },
     Then::linger, Outcome::invalid},
    {"BadValueHeader",
     [](const FakeRequest& r) {
       return is_meta(r) ? "VA x1\r\nx\r\n" : "VALUE " + r.key() + " zero 1\r\nx\r\nEND\r\n";
     },
     Then::next, Outcome::invalid},
    // The data block is not followed by "\r\n": the bytes after the
    // announced length are not a line memcached could send (for meta, a VA
    // whose length is wrong).
    {"DataLongerThanAnnounced",
     [](const FakeRequest& r) {
       return value_line(r, 3) + "abcdefgh\r\n" + (is_meta(r) ? "" : "END\r\n");
     },
     Then::next, Outcome::invalid},
    // Same, but what follows the short block happens to parse as a reply
    // line: a proxy that does not check the block's "\r\n" forwards a
    // broken frame.
    {"DataNotTerminatedByCrLf",
     [](const FakeRequest& r) {
       return value_line(r, 3) + (is_meta(r) ? "abcdeHD\r\n" : "abcdeEND\r\n");
     },
     Then::next, Outcome::invalid},
    // STORED before anything was asked: nothing tells memshard it came
    // before the first request, so it is read as that request's reply. It
    // answers no get, and no meta command (nor the binary frames, which
    // become these): invalid. (A classic write could take it.)
    {"UnsolicitedReplyOnConnect", [](const FakeRequest&) { return std::string("END\r\n"); },
     Then::next, Outcome::invalid, "STORED\r\n"},
    // 4 GB announced (more than the pool's item_size_max): refused at once,
    // before memshard buffers any of it.
    {"HugeValueNeverFinished", [](const FakeRequest& r) { return value_line(r, 4000000000); },
     Then::flood, Outcome::invalid},
    // A good reply, then bytes nobody asked for (after a quiet request,
    // after the MN that ends it): the reply reaches its client, and the
    // connection is replaced before the bytes can be read as the next
    // request's reply.
    {"StrayBytesAfterReply",
     [](const FakeRequest& r) {
       const std::string reply = absent(r);
       return reply.empty() || r.has("q") ? reply : reply + std::string(kStray);
     },
     Then::next, Outcome::answered},
};

// Waits for memshard to close the connection (it must, after garbage).
void linger(int fd, FakeServer& self) {
  std::string buffered, line;
  while (self.read_line(fd, buffered, line, 5s)) {
  }
}

// The fake's side of one connection.
void misbehave(const Garbage& g, int fd, FakeServer& self) {
  if (*g.greeting) FakeServer::send_all(fd, g.greeting);
  std::string buffered;
  FakeRequest r;
  while (self.read_request(fd, buffered, r)) {
    if (r.verb() == "mn") {
      FakeServer::send_all(fd,
                           "MN\r\n" + std::string(g.outcome == Outcome::answered ? kStray : ""));
      continue;
    }
    FakeServer::send_all(fd, g.reply(r));
    switch (g.then) {
      case Then::next:
        continue;
      case Then::close:
        return;
      case Then::flood: {
        std::string chunk(1 << 20, 'z');
        for (int i = 0; i < 32 && !self.stopping(); ++i) FakeServer::send_all(fd, chunk);
        linger(fd, self);
        return;
      }
      case Then::linger:
        linger(fd, self);
        return;
    }
  }
}

// What a client gets for `a` sent to the fake.
Replies outcome(const Garbage& g, const Ask& a) {
  switch (g.outcome) {
    case Outcome::invalid:
      return failed(a, kInvalid);
    case Outcome::closed:
      return failed(a, kClosed);
    case Outcome::passed_through:
      return failed(a, kPassed);
    case Outcome::answered:
      return absent(a);
  }
  return {};
}

// ctest and gtest name a case by its name, not by its bytes.
void PrintTo(const Garbage& g, std::ostream* os) {
  *os << g.name;
}

class GarbageBackend : public ::testing::TestWithParam<std::tuple<Garbage, Protocol>> {};

TEST_P(GarbageBackend, FailsOnlyItsOwnRequests) {
  const Garbage& g = std::get<0>(GetParam());
  const Protocol p = std::get<1>(GetParam());
  FakeServer fake([&g](int fd, FakeServer& self) { misbehave(g, fd, self); });
  TempDir dir;
  Fleet fleet(2);
  std::vector<std::string> servers = fleet.server_lines();
  servers.push_back(fake.address() + ":1");
  Proxy proxy(dir, servers, {{"timeout", "1000"}});
  // A round per form of the protocol, the fake's key asked in that form
  // (text: three rounds of get).
  std::vector<const Form*> rounds;
  for (const Form& f : forms(p)) {
    if (p != Protocol::text || f.verb == Verb::read) rounds.push_back(&f);
  }
  if (p == Protocol::text) rounds = {rounds[0], rounds[0], rounds[0]};
  const size_t n = rounds.size();
  auto keys = keys_by_address(
      proxy.config(), {fleet[0].address(), fleet[1].address(), fake.address()}, 2 * n + 2, "gb");
  const auto& a = keys[0];
  const auto& b = keys[1];
  const auto& bad = keys[2];
  {
    RawClient c(proxy.port());
    for (const auto& k : a) ASSERT_EQ(c.roundtrip(set_command(k, "ok")), "STORED\r\n");
    for (const auto& k : b) ASSERT_EQ(c.roundtrip(set_command(k, "ok")), "STORED\r\n");
  }
  uint64_t rss_before = rss_kib(proxy.pid());

  uint32_t tag = 0;
  size_t exchanges = 0;  // times the fake was asked, each after the last was answered
  ProtocolClient c(p, proxy.port());
  for (size_t round = 0; round < n; ++round) {
    const Form& form = *rounds[round];
    SCOPED_TRACE("round " + std::to_string(round) + ": " + std::string(protocol_name(p)) + " " +
                 form.name);
    // Pipelined: the fake's key between two good ones, a read of the same
    // form when the fake's is one (a getkq batch, an mg q batch).
    const Form& read = form.verb == Verb::read ? form : read_form(p);
    const Ask first{&read, a[round], ++tag}, asked{&form, bad[round], ++tag},
        last{&read, b[round], ++tag};
    const uint32_t end = ++tag;
    c.send(request(first) + request(asked) + request(last) + end_of_batch(p, end));
    ++exchanges;
    const Replies want = hit(first, "ok") + outcome(g, asked) + hit(last, "ok") + batch_end(p, end);
    EXPECT_EQ(show(c.read(want.size(), 10s)), show(want));
    ASSERT_EQ(printable(c.pending()), "") << "bytes beyond the replies";

    if (p == Protocol::text) {
      // A multi-get over all three: the fake's key reads as a miss.
      c.send("get " + a[round + n] + " " + bad[round + n] + " " + b[round + n] + "\r\n");
      ++exchanges;
      EXPECT_EQ(printable(c.next()), printable("VALUE " + a[round + n] + " 0 2\r\nok\r\nVALUE " +
                                               b[round + n] + " 0 2\r\nok\r\nEND\r\n"));
      // The fake's keys alone: the whole multi-get fails (or, answered,
      // misses).
      c.send("get " + bad[round] + " " + bad[round + n] + "\r\n");
      ++exchanges;
      const Ask only{&form, bad[round]};
      EXPECT_EQ(printable(c.next(10s)),
                printable(g.outcome == Outcome::answered ? "END\r\n" : outcome(g, only)[0]));
    }
    // The fake's keys alone, two pipelined reads (quiet ones for meta and
    // binary, then the end of the batch): each fails on its own, whether
    // they went out on one line (gets, joined) or one after the other on
    // one connection, or misses (unseen when quiet). Answered, the stray
    // bytes after the first reply may be read where the second's begins:
    // then that one fails; it never takes them for its answer.
    {
      const Form& pair = p == Protocol::text ? form : forms(p)[p == Protocol::meta ? 1 : 3];
      const Ask one{&pair, bad[round], ++tag}, two{&pair, bad[round + n], ++tag};
      const uint32_t end2 = ++tag;
      c.send(request(one) + request(two) + end_of_batch(p, end2));
      ++exchanges;
      const Replies mark = batch_end(p, end2);
      const Replies want2 = outcome(g, one) + outcome(g, two) + mark;
      const Replies instead = outcome(g, one) + failed(two, kInvalid) + mark;
      Replies got;
      while (got.size() < std::max(want2.size(), instead.size())) {
        got.push_back(c.next(10s));
        if (got.back().empty() || (!mark.empty() && got.back() == mark[0])) break;
      }
      if (g.outcome == Outcome::answered && got == instead) {
        std::cout << "(the stray bytes reached the second read: it failed)\n";
      } else {
        EXPECT_EQ(show(got), show(want2));
      }
    }
    // Another client, good keys only: untouched.
    ProtocolClient other(p, proxy.port());
    const Form& plain = read_form(p);
    const Ask ob{&plain, b[round], ++tag}, oa{&plain, a[round], ++tag};
    const uint32_t oend = ++tag;
    other.send(request(ob) + request(oa) + end_of_batch(p, oend));
    const Replies owant = hit(ob, "ok") + hit(oa, "ok") + batch_end(p, oend);
    EXPECT_EQ(show(other.read(owant.size())), show(owant));
  }
  // The same client connection still works for the real servers.
  const Ask store{&store_form(p), a.back(), ++tag, "after"}, fetch{&read_form(p), a.back(), ++tag};
  c.send(request(store) + request(fetch));
  const Replies after = stored(store) + hit(fetch, "after");
  EXPECT_EQ(show(c.read(after.size())), show(after));
  EXPECT_TRUE(proxy.process().running()) << "memshard died";
  if (g.outcome == Outcome::passed_through) {
    // One connection per worker at most: a SERVER_ERROR costs nothing.
    EXPECT_LE(fake.accepted(), 2u) << "a passed-through SERVER_ERROR closed the connection";
  } else {
    // Each time, the connection was replaced: a request that reaches the
    // fake later comes on a new one, never after bytes of the old.
    EXPECT_GE(fake.accepted(), exchanges) << "a connection was kept after a broken reply";
  }
  if (g.outcome == Outcome::invalid || g.outcome == Outcome::closed) {
    EXPECT_GE(proxy_stat(proxy.port(), "forward_error"), n);
  }
  std::cout << g.name << "/" << protocol_name(p) << ": fake accepted " << fake.accepted()
            << " connection(s) for " << exchanges << " exchanges; memshard RSS " << rss_before
            << " KiB before, " << rss_kib(proxy.pid()) << " KiB after\n";
}

std::string garbage_name(const ::testing::TestParamInfo<std::tuple<Garbage, Protocol>>& p) {
  return std::string(std::get<0>(p.param).name) + "_" +
         std::string(protocol_name(std::get<1>(p.param)));
}

INSTANTIATE_TEST_SUITE_P(Fake, GarbageBackend,
                         ::testing::Combine(::testing::ValuesIn(kGarbage),
                                            ::testing::ValuesIn(kProtocols)),
                         garbage_name);

// A multi-get's VALUE blocks that arrive together are taken from the input
// in one move (BackendConn::take_whole_blocks). A bad block after good ones
// in the same read must fail the reply exactly as a bad first block does,
// with no byte of the good blocks reaching the client, and good blocks
// with misses between them must come back whole and in order.
//
// A binary client's pipeline of getkq k1, k2, k3 and a noop travels as the
// same line ("gets k1 k2 k3"), but as three requests: one that had its
// whole answer before the reply broke keeps it (the VALUE of a later key
// shows that the keys before it missed), one that still waited fails, and
// none is told a miss on the strength of a line no key on it asked for.
struct BlockKey {
  enum What { hit, miss, fail } what;
  uint32_t flags = 0;
  std::string value;
};

struct BlockRun {
  const char* name;
  std::string reply;             // the fake's whole answer to "get k1 k2 k3", sent in one write
  std::string expected;          // a text client's reply; empty: kInvalid
  std::vector<BlockKey> binary;  // what a binary client gets for k1, k2, k3
};

std::vector<BlockRun> block_runs() {
  const std::string ok1 = "VALUE k1 0 2\r\nok\r\n";
  const std::string ok3 = "VALUE k3 5 3 99\r\nthe\r\n";
  const BlockKey hit1{BlockKey::hit, 0, "ok"}, hit3{BlockKey::hit, 5, "the"};
  const BlockKey miss{BlockKey::miss, 0, ""}, fail{BlockKey::fail, 0, ""};
  return {
      {"HitsAroundAMiss", ok1 + ok3 + "END\r\n", ok1 + ok3 + "END\r\n", {hit1, miss, hit3}},
      {"EmptyValueThenHit",
       "VALUE k1 0 0\r\n\r\n" + ok3 + "END\r\n",
       "VALUE k1 0 0\r\n\r\n" + ok3 + "END\r\n",
       {{BlockKey::hit, 0, ""}, miss, hit3}},
      {"SecondBlockNotTerminatedByCrLf",
       ok1 + "VALUE k2 0 3\r\nabcdeEND\r\n",
       "",
       {hit1, fail, fail}},
      {"SecondBlockLongerThanAnnounced",
       ok1 + "VALUE k2 0 3\r\nabcdef\r\nEND\r\n",
       "",
       {hit1, fail, fail}},
      {"SecondKeyNotAsked", ok1 + "VALUE zz 0 2\r\nok\r\nEND\r\n", "", {fail, fail, fail}},
      {"SecondKeyRepeated", ok1 + ok1 + "END\r\n", "", {fail, fail, fail}},
      {"SecondKeyOutOfOrder", ok3 + ok1 + "END\r\n", "", {miss, miss, fail}},
      {"SecondHeaderBad", ok1 + "VALUE k2 x 2\r\nok\r\nEND\r\n", "", {fail, fail, fail}},
      {"SecondValueOverItemSizeMax", ok1 + "VALUE k2 0 4000000000\r\n", "", {fail, fail, fail}},
  };
}

class GarbageBackendBlockRuns : public ::testing::TestWithParam<Protocol> {};

TEST_P(GarbageBackendBlockRuns, ABadBlockAfterGoodOnesFailsTheWholeReply) {
  const Protocol p = GetParam();
  const std::string asked = p == Protocol::text ? "get k1 k2 k3" : "gets k1 k2 k3";
  std::string current;  // the case the fake answers with
  std::mutex mu;
  FakeServer fake([&](int fd, FakeServer& self) {
    std::string buffered, line;
    while (self.read_line(fd, buffered, line)) {
      std::string reply;
      {
        std::lock_guard<std::mutex> lock(mu);
        reply = current;
      }
      // Another request than the one line expected: say so to the test.
      if (line != asked + "\r\n") reply = "SERVER_ERROR unexpected " + printable(line) + "\r\n";
      FakeServer::send_all(fd, reply);
    }
  });
  TempDir dir;
  Proxy proxy(dir, {fake.address() + ":1"}, {{"timeout", "1000"}}, {"--threads", "1", "-s", "0"});
  const Form& getkq = forms(Protocol::binary)[3];
  uint32_t tag = 0;
  for (const BlockRun& run : block_runs()) {
    SCOPED_TRACE(run.name);
    {
      std::lock_guard<std::mutex> lock(mu);
      current = run.reply;
    }
    ProtocolClient c(p, proxy.port());
    if (p == Protocol::text) {
      c.send("get k1 k2 k3\r\n");
      const std::string want = run.expected.empty() ? std::string(kInvalid) + "\r\n" : run.expected;
      EXPECT_EQ(printable(c.next()), printable(want));
      continue;
    }
    std::string batch;
    Replies want;
    for (size_t i = 0; i < 3; ++i) {
      const Ask k{&getkq, "k" + std::to_string(i + 1), ++tag};
      batch += request(k);
      const BlockKey& got = run.binary[i];
      if (got.what == BlockKey::fail) {
        want = want + failed(k, kInvalid);
      } else if (got.what == BlockKey::hit) {
        want = want + hit(k, got.value, got.flags);
      }  // a getkq's miss is silent
    }
    const uint32_t end = ++tag;
    c.send(batch + end_of_batch(p, end));
    want = want + batch_end(p, end);
    EXPECT_EQ(show(c.read(want.size())), show(want));
  }
  EXPECT_TRUE(proxy.process().running()) << "memshard died";
  proxy.dump_log_on_failure();
}

INSTANTIATE_TEST_SUITE_P(Protocols, GarbageBackendBlockRuns,
                         ::testing::Values(Protocol::text, Protocol::binary),
                         [](const ::testing::TestParamInfo<Protocol>& p) {
                           return std::string(protocol_name(p.param));
                         });

}  // namespace
}  // namespace memshard::testing::failures
