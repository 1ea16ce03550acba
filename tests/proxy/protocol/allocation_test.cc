// Parsing allocates nothing once a Request has seen its largest request:
// the global operator new is replaced to count allocations.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "proxy/protocol/meta_codec.h"
#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/request_parser.h"

// GCC inlines these into callers and then sees free() of operator new's
// memory; here that pairing is the point.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
bool g_counting = false;
long g_allocations = 0;
}  // namespace

void* operator new(std::size_t size) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace memshard::proto {
namespace {

TEST(Allocation, NoneInTheSteadyState) {
  std::string many_keys = "get";
  for (int i = 0; i < 200; ++i) many_keys += " key" + std::to_string(i);
  const std::vector<std::string> lines = {
      many_keys,
      "gat 10 a b",
      "set k 0 0 5 noreply",
      "cas k 0 0 1 2",
      "delete k 0",
      "incr k 1",
      "touch k 1",
      "mg Zm9vYmFy b v q",
      "ms QUFB 2 b T1",
      "md k q",
      "ma k v",
      "me QUFB b",
      "mn",
      "stats slabs items",
      "verbosity 1",
      "flush_all 0",
      "bogus",
      "set k 0 0 2000000",
      "mg Zm9 b Tx",
      "ms k 2000000 MX",
  };
  const std::vector<std::string> replies = {"VALUE k 0 5 7", "END", "VA 3 c1", "HD", "42"};
  Request request;
  const Limits limits;
  std::string fetch;
  for (const std::string& line : lines) {  // warm up: capacities grow here
    parse_request_line(line, limits, request);
    if (request.action == Action::multi_get) append_retrieval_line(request, request.keys, fetch);
    fetch.clear();
  }
  g_counting = true;
  {
    const std::string probe(100, 'x');  // the counter works
    EXPECT_EQ(g_allocations, 1);
  }
  g_allocations = 0;
  for (int round = 0; round < 3; ++round) {
    for (const std::string& line : lines) {
      parse_request_line(line, limits, request);
      (void)line_too_long(line);
      if (request.action == Action::multi_get) append_retrieval_line(request, request.keys, fetch);
      fetch.clear();
    }
    for (const std::string& reply : replies) (void)parse_reply_line(reply);
  }
  g_counting = false;
  EXPECT_EQ(g_allocations, 0);
}

// The backend codec, like the parser, only fills capacity it already has.
TEST(Allocation, NoneInTheCodecSteadyState) {
  const std::vector<std::string> lines = {
      "get a b c",
      "gats 10 \x01\x02",
      "cas k 1 2 5 99 noreply",
      "incr k 7",
      "delete \x80 noreply",
      "touch k 0",
      "mg QUFB b k v Oxy T5",
      "ms k 5 MA N3 F1 q",
      "ma k M- D9 J1 N0",
      "md k C1 I T2",
      "me QUFB b",
      "mn",
  };
  Request request;
  const Limits limits;
  std::string out;
  for (const std::string& line : lines) {  // warm up
    parse_request_line(line, limits, request);
    (void)append_meta_request(request, "hello", out);
    out.clear();
  }
  g_counting = true;
  g_allocations = 0;
  for (int round = 0; round < 3; ++round) {
    for (const std::string& line : lines) {
      parse_request_line(line, limits, request);
      EXPECT_TRUE(append_meta_request(request, "hello", out)) << line;
      out.clear();
    }
  }
  g_counting = false;
  EXPECT_EQ(g_allocations, 0);
}

}  // namespace
}  // namespace memshard::proto
