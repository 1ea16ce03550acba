// memshard-openloop's pure parts: its histogram, its timetable, and the
// requests and replies it reads in the three protocols. No clock, no socket.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "openloop_hist.h"
#include "openloop_protocol.h"
#include "openloop_schedule.h"

namespace memshard::bench {
namespace {

// --------------------------------------------------------------- histogram

TEST(OpenloopHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 2048; ++v) {
    EXPECT_EQ(h.index(v), v);
    EXPECT_EQ(h.lowest(h.index(v)), v);
    EXPECT_EQ(h.highest(h.index(v)), v);
  }
  h.record(7);
  h.record(9);
  h.record(1000);
  EXPECT_EQ(h.percentile(0), 7u);
  EXPECT_EQ(h.percentile(50), 9u);
  EXPECT_EQ(h.percentile(100), 1000u);
  EXPECT_EQ(h.min(), 7u);
  EXPECT_EQ(h.max(), 1000u);
  EXPECT_EQ(h.count(), 3u);
  EXPECT_DOUBLE_EQ(h.mean(), (7 + 9 + 1000) / 3.0);
}

TEST(OpenloopHistogram, BucketsTileTheRangeAndHoldTheirValues) {
  LatencyHistogram h;
  // Consecutive buckets meet: each starts one past the previous one's end.
  for (size_t i = 1; i + 1 < h.buckets(); ++i) {
    ASSERT_EQ(h.lowest(i), h.highest(i - 1) + 1) << "bucket " << i;
    ASSERT_LE(h.lowest(i), h.highest(i));
  }
  std::mt19937_64 rng(42);
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = rng() >> (rng() % 64);
    if (v >= (uint64_t{1} << 40)) continue;
    size_t b = h.index(v);
    ASSERT_LE(h.lowest(b), v);
    ASSERT_GE(h.highest(b), v);
  }
}

TEST(OpenloopHistogram, ThreeSignificantDigits) {
  LatencyHistogram h;
  // A bucket is at most 1/2048 of its values wide.
  for (uint64_t v : {2048ull, 5000ull, 123456ull, 999999ull, 87654321ull, 1000000000000ull}) {
    size_t b = h.index(v);
    double width = static_cast<double>(h.highest(b) - h.lowest(b) + 1);
    EXPECT_LE(width / static_cast<double>(h.lowest(b)), 1.0 / 2048 + 1e-12) << v;
  }
  // Percentiles of 1..1,000,000 us in ns: within 0.1% of the exact ones.
  for (uint64_t v = 1; v <= 1000000; ++v) h.record(v * 1000);
  for (double p : {50.0, 90.0, 99.0, 99.9, 99.99}) {
    double exact = std::ceil(p / 100 * 1e6 - 1e-6) * 1000;
    double got = static_cast<double>(h.percentile(p));
    EXPECT_NEAR(got / exact, 1.0, 0.001) << "p" << p;
    EXPECT_GE(got, exact) << "p" << p;  // the bucket's highest value, as HdrHistogram reports
  }
  EXPECT_EQ(h.percentile(100), 1000000000u);
}

TEST(OpenloopHistogram, RanksRoundUp) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 1000; ++v) h.record(v);
  EXPECT_EQ(h.percentile(99.9), 999u);
  EXPECT_EQ(h.percentile(99.95), 1000u);
  EXPECT_EQ(h.percentile(50), 500u);
  EXPECT_EQ(h.percentile(0.01), 1u);
  EXPECT_EQ(h.percentile(0), 1u);
}

TEST(OpenloopHistogram, EmptyReadsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(50), 0u);
  EXPECT_EQ(h.percentile(100), 0u);
  EXPECT_EQ(h.mean(), 0.0);
}

TEST(OpenloopHistogram, PercentilesNeverExceedTheMaximum) {
  LatencyHistogram h;
  h.record(1000001);  // a wide bucket, whose highest value is above it
  EXPECT_EQ(h.percentile(50), 1000001u);
  EXPECT_EQ(h.percentile(99.9), 1000001u);
}

TEST(OpenloopHistogram, ValuesPastTheRangeShareTheLastBucketMaxIsExact) {
  LatencyHistogram h(11, 20);
  h.record(uint64_t{1} << 30);
  h.record((uint64_t{1} << 30) + 5);
  EXPECT_EQ(h.index(uint64_t{1} << 30), h.buckets() - 1);
  EXPECT_EQ(h.max(), (uint64_t{1} << 30) + 5);
  EXPECT_EQ(h.percentile(50), (uint64_t{1} << 30) + 5);  // clamped to the maximum
}

TEST(OpenloopHistogram, MergeIsRecordingBoth) {
  LatencyHistogram a, b, both;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    uint64_t v = 1000 + rng() % 5000000;
    (i % 3 ? a : b).record(v);
    both.record(v);
  }
  EXPECT_TRUE(a.merge(b));
  EXPECT_EQ(a.count(), both.count());
  EXPECT_EQ(a.max(), both.max());
  EXPECT_EQ(a.min(), both.min());
  EXPECT_NEAR(a.mean(), both.mean(), 1e-6 * both.mean());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9}) EXPECT_EQ(a.percentile(p), both.percentile(p));
  LatencyHistogram coarse(7);
  EXPECT_FALSE(a.merge(coarse));
  LatencyHistogram empty;
  EXPECT_TRUE(empty.merge(a));
  EXPECT_EQ(empty.min(), a.min());
}

TEST(OpenloopHistogram, RecordNCountsEach) {
  LatencyHistogram h;
  h.record_n(1500, 999);
  h.record_n(1900, 1);
  h.record_n(1, 0);  // nothing
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_EQ(h.min(), 1500u);
  EXPECT_EQ(h.percentile(99.9), 1500u);
  EXPECT_EQ(h.percentile(100), 1900u);
}

TEST(OpenloopHistogram, CoarseWindowsKeepTwoDigits) {
  LatencyHistogram h(7);  // what the per-window histograms use
  for (uint64_t v = 1; v <= 100000; ++v) h.record(v * 100);
  double exact = 99900 * 100.0;
  EXPECT_NEAR(static_cast<double>(h.percentile(99.9)) / exact, 1.0, 0.01);
}

// --------------------------------------------------------------- schedule

ScheduleConfig busy_only(double rate, int threads, int index, int conns) {
  ScheduleConfig c;
  c.busy_rate = rate;
  c.threads = threads;
  c.thread_index = index;
  c.busy_conns = conns;
  c.start_ns = 1'000'000'000;
  c.end_ns = c.start_ns + 1'000'000'000;
  return c;
}

TEST(OpenloopSchedule, OneThreadSendsAtTheRate) {
  Schedule s(busy_only(1000, 1, 0, 4));
  std::vector<Schedule::Due> all;
  while (s.next_at() != INT64_MAX) all.push_back(s.pop());
  ASSERT_EQ(all.size(), 1000u);  // one second at 1000/s, end excluded
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].at, 1'000'000'000 + static_cast<int64_t>(i) * 1'000'000);
    EXPECT_EQ(all[i].conn, static_cast<int>(i % 4));
    EXPECT_FALSE(all[i].idle);
  }
}

TEST(OpenloopSchedule, ThreadsInterleaveIntoOneTimetable) {
  // 3 threads at 3000/s together: their times merged are every 1/3 ms.
  std::vector<int64_t> merged;
  for (int j = 0; j < 3; ++j) {
    Schedule s(busy_only(3000, 3, j, 2));
    while (s.next_at() != INT64_MAX) merged.push_back(s.pop().at);
  }
  std::sort(merged.begin(), merged.end());
  ASSERT_EQ(merged.size(), 3000u);
  for (size_t g = 0; g < merged.size(); ++g)
    EXPECT_EQ(merged[g], 1'000'000'000 + static_cast<int64_t>(std::floor(static_cast<double>(g) * 1e9 / 3000.0)));
}

TEST(OpenloopSchedule, EveryConnectionKeepsAFixedPeriod) {
  Schedule s(busy_only(32000, 2, 1, 16));
  std::map<int, std::vector<int64_t>> by_conn;
  while (s.next_at() != INT64_MAX) {
    auto d = s.pop();
    by_conn[d.conn].push_back(d.at);
  }
  ASSERT_EQ(by_conn.size(), 16u);
  for (auto& [conn, times] : by_conn) {
    ASSERT_EQ(times.size(), 1000u) << conn;
    for (size_t i = 1; i < times.size(); ++i) {
      // 16 of this thread's requests apart, each 2 of the whole generator's.
      EXPECT_NEAR(static_cast<double>(times[i] - times[i - 1]), 1e6, 1.0) << conn;
    }
  }
}

TEST(OpenloopSchedule, TimesAreDueInOrderAndBeforeTheEnd) {
  ScheduleConfig c = busy_only(777.7, 1, 0, 3);
  c.idle_conns = 50;
  c.idle_min_ns = 10'000'000;
  c.idle_max_ns = 30'000'000;
  Schedule s(c);
  int64_t last = 0;
  size_t n = 0;
  while (s.next_at() != INT64_MAX) {
    int64_t at = s.next_at();
    auto d = s.pop();
    EXPECT_EQ(d.at, at);
    EXPECT_GE(d.at, last);
    EXPECT_GE(d.at, c.start_ns);
    EXPECT_LT(d.at, c.end_ns);
    last = d.at;
    ++n;
  }
  EXPECT_GT(n, 777u);
}

TEST(OpenloopSchedule, IdleConnectionsWaitWithinTheirInterval) {
  ScheduleConfig c;
  c.busy_rate = 0;
  c.busy_conns = 0;
  c.idle_conns = 200;
  c.idle_min_ns = 1'000'000'000;
  c.idle_max_ns = 3'000'000'000;
  c.start_ns = 0;
  c.end_ns = 60'000'000'000;
  c.seed = 5;
  Schedule s(c);
  std::map<int, std::vector<int64_t>> by_conn;
  while (s.next_at() != INT64_MAX) {
    auto d = s.pop();
    EXPECT_TRUE(d.idle);
    by_conn[d.conn].push_back(d.at);
  }
  ASSERT_EQ(by_conn.size(), 200u);
  double sum = 0;
  size_t gaps = 0;
  for (auto& [conn, times] : by_conn) {
    EXPECT_GE(conn, 0);
    EXPECT_LT(conn, 200);
    EXPECT_LT(times[0], 3'000'000'000);  // the first within one interval of the start
    for (size_t i = 1; i < times.size(); ++i) {
      int64_t gap = times[i] - times[i - 1];
      EXPECT_GE(gap, c.idle_min_ns);
      EXPECT_LE(gap, c.idle_max_ns);
      sum += static_cast<double>(gap);
      ++gaps;
    }
  }
  // Uniform over 1-3 s: a mean near 2 s over about 6,000 gaps.
  EXPECT_NEAR(sum / static_cast<double>(gaps) / 1e9, 2.0, 0.05);
  // Spread over the first interval, not all at once.
  std::set<int64_t> firsts;
  for (auto& [conn, times] : by_conn) firsts.insert(times[0] / 100'000'000);
  EXPECT_GT(firsts.size(), 20u);
}

TEST(OpenloopSchedule, IdleConnectionsComeAfterTheBusyOnes) {
  ScheduleConfig c = busy_only(100, 1, 0, 4);
  c.idle_conns = 10;
  c.idle_min_ns = c.idle_max_ns = 100'000'000;
  Schedule s(c);
  std::set<int> idle_conns;
  while (s.next_at() != INT64_MAX) {
    auto d = s.pop();
    if (d.idle) {
      idle_conns.insert(d.conn);
    } else {
      EXPECT_LT(d.conn, 4);
    }
  }
  EXPECT_EQ(idle_conns.size(), 10u);
  EXPECT_EQ(*idle_conns.begin(), 4);
  EXPECT_EQ(*idle_conns.rbegin(), 13);
}

TEST(OpenloopSchedule, BurstConnectionsSendOnceTogether) {
  ScheduleConfig c = busy_only(100, 1, 0, 2);
  c.idle_conns = 3;
  c.idle_min_ns = c.idle_max_ns = 300'000'000;
  c.burst_conns = 5;
  c.burst_at_ns = c.start_ns + 500'000'000;
  Schedule s(c);
  std::vector<Schedule::Due> bursts;
  size_t idle = 0;
  while (s.next_at() != INT64_MAX) {
    auto d = s.pop();
    if (d.burst) {
      EXPECT_TRUE(d.idle);
      bursts.push_back(d);
    } else if (d.idle) {
      ++idle;
      EXPECT_GE(d.conn, 2);
      EXPECT_LT(d.conn, 5);
    }
  }
  ASSERT_EQ(bursts.size(), 5u);
  for (size_t i = 0; i < bursts.size(); ++i) {
    EXPECT_EQ(bursts[i].at, c.burst_at_ns);
    EXPECT_EQ(bursts[i].conn, 5 + static_cast<int>(i));
  }
  EXPECT_GE(idle, 9u);  // 3 connections every 0.3 s over a second
}

TEST(OpenloopSchedule, SameSeedSameTimetable) {
  ScheduleConfig c;
  c.idle_conns = 30;
  c.end_ns = 20'000'000'000;
  c.seed = 9;
  auto run = [](const ScheduleConfig& cfg) {
    Schedule s(cfg);
    std::vector<std::pair<int64_t, int>> v;
    while (s.next_at() != INT64_MAX) {
      auto d = s.pop();
      v.emplace_back(d.at, d.conn);
    }
    return v;
  };
  EXPECT_EQ(run(c), run(c));
  ScheduleConfig other = c;
  other.seed = 10;
  EXPECT_NE(run(c), run(other));
}

TEST(OpenloopSchedule, NothingWithoutRateOrConnections) {
  EXPECT_EQ(Schedule(busy_only(0, 1, 0, 4)).next_at(), INT64_MAX);
  EXPECT_EQ(Schedule(busy_only(1000, 1, 0, 0)).next_at(), INT64_MAX);
}

TEST(OpenloopSchedule, IdleConnectionsShareTheTotalRate) {
  // 968 connections every 1-3 s send 484/s of a 10,000/s total.
  EXPECT_NEAR(busy_rate_for(10000, 968, 1, 3), 10000 - 484, 1e-9);
  EXPECT_DOUBLE_EQ(busy_rate_for(5000, 0, 1, 3), 5000);
  EXPECT_LT(busy_rate_for(100, 968, 1, 3), 0);
}

// --------------------------------------------------------------- protocol

struct ProtocolTest : ::testing::Test {
  KeyNames names{"k:"};
  ValuePattern values{3, 64};
  std::string value_of(uint32_t k, size_t size = 16) {
    std::string v(size, '\0');
    values.fill(names.name(k), size, v.data());
    return v;
  }
  Request get(std::initializer_list<uint32_t> keys) {
    Request r;
    r.nkeys = static_cast<int>(keys.size());
    int i = 0;
    for (uint32_t k : keys) r.keys[i++] = k;
    return r;
  }
  Request set(uint32_t k) {
    Request r;
    r.set = true;
    r.keys[0] = k;
    return r;
  }
  std::string encode(Protocol p, const Request& r) {
    std::string out;
    encode_request(p, r, names, values, 16, out);
    return out;
  }
  ReplyResult parse(Protocol p, const Request& r, const std::string& in) {
    return parse_reply(p, r, in, values, 16);
  }
  // Every proper prefix of a reply reads incomplete.
  void expect_incomplete_prefixes(Protocol p, const Request& r, const std::string& in) {
    for (size_t n = 0; n < in.size(); ++n)
      EXPECT_EQ(parse(p, r, in.substr(0, n)).kind, ReplyResult::incomplete) << n;
  }
};

TEST_F(ProtocolTest, TextRequests) {
  EXPECT_EQ(encode(Protocol::text, get({1})), "get k:1\r\n");
  EXPECT_EQ(encode(Protocol::text, get({1, 22, 3})), "get k:1 k:22 k:3\r\n");
  std::string flags = std::to_string(values.flags("k:5"));
  EXPECT_EQ(encode(Protocol::text, set(5)), "set k:5 " + flags + " 0 16\r\n" + value_of(5) + "\r\n");
}

TEST_F(ProtocolTest, TextReplies) {
  std::string f1 = std::to_string(values.flags("k:1")), f3 = std::to_string(values.flags("k:3"));
  std::string reply = "VALUE k:1 " + f1 + " 16\r\n" + value_of(1) + "\r\nVALUE k:3 " + f3 +
                      " 16 99\r\n" + value_of(3) + "\r\nEND\r\n";
  Request r = get({1, 2, 3});
  auto res = parse(Protocol::text, r, reply);
  EXPECT_EQ(res.kind, ReplyResult::done);
  EXPECT_EQ(res.consumed, reply.size());
  EXPECT_EQ(res.hits, 2u);
  EXPECT_EQ(res.misses, 1u);
  EXPECT_EQ(res.mismatches, 0u);
  expect_incomplete_prefixes(Protocol::text, r, reply);

  auto miss = parse(Protocol::text, get({4}), "END\r\n");
  EXPECT_EQ(miss.kind, ReplyResult::done);
  EXPECT_EQ(miss.misses, 1u);

  std::string wrong = value_of(1);
  wrong[10] ^= 1;
  auto bad = parse(Protocol::text, get({1}), "VALUE k:1 " + f1 + " 16\r\n" + wrong + "\r\nEND\r\n");
  EXPECT_EQ(bad.mismatches, 1u);
  auto bad_flags =
      parse(Protocol::text, get({1}), "VALUE k:1 " + std::to_string(values.flags("k:1") + 1) +
                                          " 16\r\n" + value_of(1) + "\r\nEND\r\n");
  EXPECT_EQ(bad_flags.mismatches, 1u);

  EXPECT_EQ(parse(Protocol::text, set(1), "STORED\r\n").kind, ReplyResult::done);
  EXPECT_TRUE(parse(Protocol::text, set(1), "SERVER_ERROR out of memory\r\n").server_error);
  EXPECT_TRUE(parse(Protocol::text, get({1}), "SERVER_ERROR backend down\r\n").server_error);
  EXPECT_EQ(parse(Protocol::text, set(1), "HUH\r\n").kind, ReplyResult::malformed);
  EXPECT_EQ(parse(Protocol::text, get({1}), "VALUE k:1 x 16\r\n").kind, ReplyResult::malformed);
  // Bytes after the reply are left unconsumed.
  auto two = parse(Protocol::text, get({1}), "END\r\nEND\r\n");
  EXPECT_EQ(two.consumed, 5u);
}

TEST_F(ProtocolTest, MetaRequests) {
  EXPECT_EQ(encode(Protocol::meta, get({1})), "mg k:1 v f k\r\n");
  EXPECT_EQ(encode(Protocol::meta, get({1, 2})), "mg k:1 v f k q\r\nmg k:2 v f k q\r\nmn\r\n");
  std::string flags = std::to_string(values.flags("k:5"));
  EXPECT_EQ(encode(Protocol::meta, set(5)), "ms k:5 16 F" + flags + "\r\n" + value_of(5) + "\r\n");
}

TEST_F(ProtocolTest, MetaReplies) {
  std::string f1 = std::to_string(values.flags("k:1"));
  std::string hit = "VA 16 f" + f1 + " kk:1\r\n" + value_of(1) + "\r\n";
  auto one = parse(Protocol::meta, get({1}), hit);
  EXPECT_EQ(one.kind, ReplyResult::done);
  EXPECT_EQ(one.hits, 1u);
  EXPECT_EQ(one.mismatches, 0u);
  expect_incomplete_prefixes(Protocol::meta, get({1}), hit);
  EXPECT_EQ(parse(Protocol::meta, get({1}), "EN\r\n").misses, 1u);

  Request multi = get({1, 2, 3});
  std::string reply = hit + "MN\r\n";
  auto m = parse(Protocol::meta, multi, reply);
  EXPECT_EQ(m.kind, ReplyResult::done);
  EXPECT_EQ(m.consumed, reply.size());
  EXPECT_EQ(m.hits, 1u);
  EXPECT_EQ(m.misses, 2u);
  expect_incomplete_prefixes(Protocol::meta, multi, reply);

  EXPECT_EQ(parse(Protocol::meta, set(1), "HD\r\n").kind, ReplyResult::done);
  EXPECT_TRUE(parse(Protocol::meta, set(1), "NS\r\n").server_error);
  EXPECT_EQ(parse(Protocol::meta, get({1}), "VA 16\r\n" + value_of(1) + "\r\n").kind,
            ReplyResult::malformed);  // no key flag: it cannot be checked
}

std::string binary_reply(uint8_t opcode, uint16_t status, const std::string& extras,
                         const std::string& key, const std::string& value) {
  std::string out;
  out.push_back(static_cast<char>(0x81));
  out.push_back(static_cast<char>(opcode));
  out.push_back(static_cast<char>(key.size() >> 8));
  out.push_back(static_cast<char>(key.size() & 0xff));
  out.push_back(static_cast<char>(extras.size()));
  out.push_back(0);
  out.push_back(static_cast<char>(status >> 8));
  out.push_back(static_cast<char>(status & 0xff));
  size_t body = extras.size() + key.size() + value.size();
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((body >> (8 * i)) & 0xff));
  out.append(12, '\0');
  return out + extras + key + value;
}
std::string be32(uint32_t v) {
  std::string s;
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

TEST_F(ProtocolTest, BinaryRequests) {
  std::string g = encode(Protocol::binary, get({7}));
  ASSERT_EQ(g.size(), 24u + 3);
  EXPECT_EQ(static_cast<unsigned char>(g[0]), 0x80);
  EXPECT_EQ(g[1], 0x0c);  // GETK
  EXPECT_EQ(g[3], 3);     // key length
  EXPECT_EQ(g.substr(24), "k:7");
  std::string m = encode(Protocol::binary, get({7, 8}));
  ASSERT_EQ(m.size(), 2 * (24u + 3) + 24);
  EXPECT_EQ(m[1], 0x0d);                       // GETKQ
  EXPECT_EQ(m[27 + 1], 0x0d);                  // GETKQ
  EXPECT_EQ(m[54 + 1], 0x0a);                  // NOOP
  std::string s = encode(Protocol::binary, set(5));
  ASSERT_EQ(s.size(), 24u + 8 + 3 + 16);
  EXPECT_EQ(s[1], 0x01);
  EXPECT_EQ(s[4], 8);  // extras
  EXPECT_EQ(s.substr(24, 4), be32(values.flags("k:5")));
  EXPECT_EQ(s.substr(24 + 8 + 3), value_of(5));
}

TEST_F(ProtocolTest, BinaryReplies) {
  std::string hit = binary_reply(0x0c, 0, be32(values.flags("k:1")), "k:1", value_of(1));
  auto one = parse(Protocol::binary, get({1}), hit);
  EXPECT_EQ(one.kind, ReplyResult::done);
  EXPECT_EQ(one.consumed, hit.size());
  EXPECT_EQ(one.hits, 1u);
  EXPECT_EQ(one.mismatches, 0u);
  expect_incomplete_prefixes(Protocol::binary, get({1}), hit);
  auto miss = parse(Protocol::binary, get({1}), binary_reply(0x0c, 1, "", "k:1", "Not found"));
  EXPECT_EQ(miss.misses, 1u);
  EXPECT_FALSE(miss.server_error);

  Request multi = get({1, 2});
  std::string mh = binary_reply(0x0d, 0, be32(values.flags("k:2")), "k:2", value_of(2)) +
                   binary_reply(0x0a, 0, "", "", "");
  auto m = parse(Protocol::binary, multi, mh);
  EXPECT_EQ(m.kind, ReplyResult::done);
  EXPECT_EQ(m.hits, 1u);
  EXPECT_EQ(m.misses, 1u);
  expect_incomplete_prefixes(Protocol::binary, multi, mh);
  std::string wrong = value_of(2);
  wrong[0] ^= 1;
  EXPECT_EQ(parse(Protocol::binary, multi,
                  binary_reply(0x0d, 0, be32(values.flags("k:2")), "k:2", wrong) +
                      binary_reply(0x0a, 0, "", "", ""))
                .mismatches,
            1u);

  EXPECT_EQ(parse(Protocol::binary, set(1), binary_reply(0x01, 0, "", "", "")).kind,
            ReplyResult::done);
  EXPECT_TRUE(parse(Protocol::binary, set(1), binary_reply(0x01, 0x82, "", "", "oom")).server_error);
  EXPECT_EQ(parse(Protocol::binary, get({1}), "\x80" + std::string(23, '\0')).kind,
            ReplyResult::malformed);
}

TEST_F(ProtocolTest, ProtocolNames) {
  Protocol p = Protocol::text;
  EXPECT_TRUE(parse_protocol("meta", p));
  EXPECT_EQ(p, Protocol::meta);
  EXPECT_TRUE(parse_protocol("binary", p));
  EXPECT_STREQ(protocol_name(p), "binary");
  EXPECT_FALSE(parse_protocol("ascii", p));
}

}  // namespace
}  // namespace memshard::bench
