// Gets joined into shared multi-get lines (BackendConn::enqueue_retrieval).
//
// The get and gets requests that one worker sends to one server in one loop
// iteration go out as one "get k1 k2 ..." line, and the server's one reply
// is split back per request by key order. These tests check both halves:
// what a server receives (on a recording fake, since memcached cannot show
// its input), and that every client still reads exactly its own replies,
// in order, against real memcached servers under concurrent pipelined load
// mixed with writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "failure_util.h"
#include "protocol_client.h"

namespace memshard::testing {
namespace {

using failures::FakeServer;
using failures::Proxy;
using failures::ReplyReader;
using namespace std::chrono_literals;

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A memcached stand-in that records every line it receives: get, gets and
// gat answered from a map (hits in the order asked, one block per key
// asked, as memcached does), set stored, anything else refused.
class RecordingServer {
 public:
  RecordingServer() : fake_([this](int fd, FakeServer& self) { serve(fd, self); }) {}
  std::string address() const { return fake_.address(); }
  std::vector<std::string> take_lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(lines_, {});
  }

 private:
  void serve(int fd, FakeServer& self) {
    std::string buffered, line;
    while (self.read_line(fd, buffered, line)) {
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      record(line);
      std::vector<std::string> w = words(line);
      if (w.empty()) {
        FakeServer::send_all(fd, "ERROR\r\n");
      } else if (w[0] == "get" || w[0] == "gets" || w[0] == "gat") {
        std::string reply;
        for (size_t i = w[0] == "gat" ? 2 : 1; i < w.size(); ++i) {
          // memcached's answer when it cannot build the rest of a reply:
          // the values so far, then the error instead of END.
          if (w[i] == "oom") {
            reply += "SERVER_ERROR out of memory writing get response\r\n";
            break;
          }
          std::lock_guard<std::mutex> lock(mu_);
          auto it = store_.find(w[i]);
          if (it == store_.end()) continue;
          reply += "VALUE " + w[i] + " 0 " + std::to_string(it->second.size());
          if (w[0] == "gets") reply += " 7";
          reply += "\r\n" + it->second + "\r\n";
        }
        if (!reply.ends_with("response\r\n")) reply += "END\r\n";
        FakeServer::send_all(fd, reply);
      } else if (w[0] == "set" && w.size() == 5) {
        std::string data;
        if (!self.read_line(fd, buffered, data)) return;
        while (!data.empty() && (data.back() == '\n' || data.back() == '\r')) data.pop_back();
        record(data);
        {
          std::lock_guard<std::mutex> lock(mu_);
          store_[w[1]] = data;
        }
        FakeServer::send_all(fd, "STORED\r\n");
      } else {
        FakeServer::send_all(fd, "ERROR\r\n");
      }
    }
  }
  void record(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(line);
  }

  std::mutex mu_;
  std::map<std::string, std::string> store_;
  std::vector<std::string> lines_;
  FakeServer fake_;  // last: its threads stop before the members they use go
};

// The server's counter of operations that joined the line before them.
uint64_t requests_joined(uint16_t port) {
  RawClient c(port);
  std::string stats = c.roundtrip("stats servers\r\n", "END\r\n");
  uint64_t total = 0;
  std::istringstream in(stats);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> w = words(line);
    if (w.size() == 3 && w[1].ends_with(":requests_joined")) total += std::stoull(w[2]);
  }
  return total;
}

std::string hit(const std::string& key, const std::string& value, bool cas = false) {
  return "VALUE " + key + " 0 " + std::to_string(value.size()) + (cas ? " 7" : "") + "\r\n" +
         value + "\r\nEND\r\n";
}

// memshard (one worker, so one connection) in front of the recording
// server alone, with a and c stored and the lines so far taken.
class JoinOnFake : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(c.roundtrip(set_command("a", "A")), "STORED\r\n");
    ASSERT_EQ(c.roundtrip(set_command("c", "C")), "STORED\r\n");
    server.take_lines();
  }
  void TearDown() override { proxy.dump_log_on_failure(); }

  RecordingServer server;
  TempDir dir;
  Proxy proxy{dir, std::vector<std::string>{server.address() + ":1"},
              failures::Directives{{"timeout", "2000"}},
              std::vector<std::string>{"--threads", "1", "-s", "0"}};
  RawClient c{proxy.port()};
};

TEST_F(JoinOnFake, PipelinedGetsShareLinesAndEachGetsItsOwnReply) {
  uint64_t joined_before = requests_joined(proxy.port());

  // One write: memshard reads and routes it all in one loop iteration.
  c.send(
      "get b\r\n"             // opens "get b"
      "get a\r\n"             // joins: a miss, then a hit of the next request
      "get c b\r\n"           // b is on the line already: a new line
      "get a\r\n"             // joins the two keys of another request
      "gets c\r\n"            // another verb: a new line
      "gets a\r\n"            // joins
      "set z 0 0 1\r\nZ\r\n"  // ends the line; goes out after it
      "get z\r\n"             // after the set, on a line of its own
      "gat 0 a\r\n"           // gat is never joined (its exptime is per line)
      "get b\r\n");
  ReplyReader replies(c);
  EXPECT_EQ(replies.next(), "END\r\n");
  EXPECT_EQ(replies.next(), hit("a", "A"));
  EXPECT_EQ(replies.next(), "VALUE c 0 1\r\nC\r\nEND\r\n");
  EXPECT_EQ(replies.next(), hit("a", "A"));
  EXPECT_EQ(replies.next(), hit("c", "C", true));
  EXPECT_EQ(replies.next(), hit("a", "A", true));
  EXPECT_EQ(replies.next(), "STORED\r\n");
  EXPECT_EQ(replies.next(), hit("z", "Z"));
  EXPECT_EQ(replies.next(), hit("a", "A"));
  EXPECT_EQ(replies.next(), "END\r\n");
  EXPECT_EQ(replies.pending(), "");

  EXPECT_EQ(server.take_lines(),
            (std::vector<std::string>{"get b a", "get c b a", "gets c a", "set z 0 0 1", "Z",
                                      "get z", "gat 0 a", "get b"}));
  EXPECT_EQ(requests_joined(proxy.port()) - joined_before, 3u);
}

// A server error in the middle of a shared line fails the requests whose
// keys it may have cut off, and only those: a request whose keys were all
// answered before it keeps its answer, as on a line of its own. A text
// client's gets and a binary client's getk frames are joined alike (the
// binary ones as "gets"); a binary client is told the error as memcached's
// binary protocol says it (out of memory: status 0x82). Meta requests are
// never joined.
class JoinOnFakeByProtocol : public JoinOnFake,
                             public ::testing::WithParamInterface<failures::Protocol> {};

TEST_P(JoinOnFakeByProtocol, AnErrorMidLineFailsOnlyTheRequestsItCutOff) {
  using failures::Ask;
  using failures::Protocol;
  using failures::Replies;
  using failures::operator+;
  const Protocol p = GetParam();
  constexpr std::string_view kOom = "SERVER_ERROR out of memory writing get response";
  // The requests, each its keys: text's third asks for c and oom at once
  // (c's value comes, oom's does not), binary asks one key a frame.
  const std::vector<std::vector<std::string>> requests =
      p == Protocol::text
          ? std::vector<std::vector<std::string>>{{"a"}, {"b"}, {"c", "oom"}, {"d"}}
          : std::vector<std::vector<std::string>>{{"a"}, {"b"}, {"c"}, {"oom"}, {"d"}};
  const failures::Form& read = failures::read_form(p);
  failures::ProtocolClient client(p, proxy.port());
  std::string batch;
  Replies want;
  bool cut = false;  // a request at or after the error's key: it fails
  uint32_t tag = 0;
  for (const auto& keys : requests) {
    const Ask ask{&read, keys[0], ++tag};
    if (p == Protocol::text) {
      batch += "get";
      for (const std::string& k : keys) batch += " " + k;
      batch += "\r\n";
    } else {
      batch += failures::request(ask);
    }
    cut = cut || std::find(keys.begin(), keys.end(), "oom") != keys.end();
    if (cut) {
      want = want + failures::failed(ask, kOom);
    } else if (keys[0] == "a" || keys[0] == "c") {
      want = want + failures::hit(ask, keys[0] == "a" ? "A" : "C");
    } else {
      want = want + failures::absent(ask);
    }
  }
  const uint32_t end = ++tag;
  client.send(batch + failures::end_of_batch(p, end));
  want = want + failures::batch_end(p, end);
  EXPECT_EQ(failures::show(client.read(want.size())), failures::show(want));
  EXPECT_EQ(client.pending(), "");
  EXPECT_EQ(
      server.take_lines(),
      (std::vector<std::string>{p == Protocol::text ? "get a b c oom d" : "gets a b c oom d"}));
  // The connection goes on.
  const Ask again{&read, "c", ++tag};
  client.send(failures::request(again));
  EXPECT_EQ(failures::show(client.read(1)), failures::show(failures::hit(again, "C")));
}

INSTANTIATE_TEST_SUITE_P(Protocols, JoinOnFakeByProtocol,
                         ::testing::Values(failures::Protocol::text, failures::Protocol::binary),
                         [](const ::testing::TestParamInfo<failures::Protocol>& p) {
                           return std::string(failures::protocol_name(p.param));
                         });

// Whatever else a client pipelines, its gets never share a line past a
// write of its own: a get after a set must see the set.
TEST(MultigetJoin, ConcurrentPipelinedClientsReadExactlyTheirOwnReplies) {
  Fleet fleet(3);
  TempDir dir;
  Proxy proxy(dir, fleet.server_lines(), {{"timeout", "5000"}});
  constexpr int kShared = 40;
  {
    RawClient c(proxy.port());
    for (int i = 0; i < kShared; ++i) {
      std::string k = "shared:" + std::to_string(i);
      ASSERT_EQ(c.roundtrip(set_command(k, "value-of-" + k)), "STORED\r\n");
    }
  }
  uint64_t joined_before = requests_joined(proxy.port());

  constexpr int kClients = 6, kBatches = 40, kPerBatch = 40;
  std::vector<std::string> failures(kClients);
  std::vector<uint64_t> checked(kClients, 0);
  auto client = [&](int id) {
    std::mt19937 rng(1234u + static_cast<unsigned>(id));
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    std::map<std::string, std::string> own;  // this client's keys: what the servers hold
    std::string prefix = "client" + std::to_string(id) + ":";
    auto any_key = [&]() -> std::string {
      switch (pick(3)) {
        case 0:
          return "shared:" + std::to_string(pick(kShared));
        case 1:
          return prefix + std::to_string(pick(12));
        default:
          return "never:" + std::to_string(pick(20));
      }
    };
    auto value_of = [&](const std::string& k) -> std::optional<std::string> {
      if (k.starts_with("shared:")) return "value-of-" + k;
      auto it = own.find(k);
      if (it == own.end()) return std::nullopt;
      return it->second;
    };
    RawClient c(proxy.port());
    ReplyReader replies(c);
    for (int batch = 0; batch < kBatches; ++batch) {
      std::string wire;
      std::vector<std::string> want;
      for (int r = 0; r < kPerBatch; ++r) {
        int kind = pick(20);
        if (kind < 13) {  // get or gets of 1 to 4 keys, duplicates allowed
          bool cas = kind >= 10;
          int n = kind % 3 == 0 ? 1 + pick(4) : 1;
          std::string line = cas ? "gets" : "get", reply;
          for (int i = 0; i < n; ++i) {
            std::string k = any_key();
            line += " " + k;
            if (auto v = value_of(k)) {
              reply += "VALUE " + k + " 0 " + std::to_string(v->size()) + (cas ? " CAS" : "") +
                       "\r\n" + *v + "\r\n";
            }
          }
          wire += line + "\r\n";
          want.push_back(reply + "END\r\n");
        } else if (kind < 17) {
          std::string k = prefix + std::to_string(pick(12));
          std::string v = "v" + std::to_string(rng() % 100000) + std::string(pick(40), 'x');
          wire += set_command(k, v);
          own[k] = v;
          want.push_back("STORED\r\n");
        } else {
          std::string k = prefix + std::to_string(pick(12));
          wire += "delete " + k + "\r\n";
          want.push_back(own.erase(k) ? "DELETED\r\n" : "NOT_FOUND\r\n");
        }
      }
      c.send(wire);
      for (const std::string& w : want) {
        std::string got = replies.next(10s);
        // A gets reply's cas is the server's: compare all but its value.
        std::string normalized;
        std::istringstream in(got);
        for (std::string line; std::getline(in, line);) {
          std::vector<std::string> f = words(line);
          if (f.size() == 5 && f[0] == "VALUE")
            line = "VALUE " + f[1] + " " + f[2] + " " + f[3] + " CAS\r";
          normalized += line + "\n";
        }
        if (normalized != w) {
          failures[id] = "batch " + std::to_string(batch) + ": want " + printable(w) + ", got " +
                         printable(got);
          return;
        }
        ++checked[id];
      }
    }
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < kClients; ++id) threads.emplace_back(client, id);
  for (auto& t : threads) t.join();
  for (int id = 0; id < kClients; ++id) {
    EXPECT_EQ(failures[id], "") << "client " << id;
    EXPECT_EQ(checked[id], uint64_t{kBatches} * kPerBatch) << "client " << id;
  }
  uint64_t joined = requests_joined(proxy.port()) - joined_before;
  std::cout << "operations joined to the line before: " << joined << "\n";
  EXPECT_GT(joined, 0u) << "no get was ever joined: the mechanism was not exercised";
  proxy.dump_log_on_failure();
}

}  // namespace
}  // namespace memshard::testing
