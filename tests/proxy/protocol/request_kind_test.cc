// request_kind.h: one answer to "is this a read", whatever the protocol.
#include "proxy/protocol/request_kind.h"

#include <gtest/gtest.h>

#include <string>

#include "proxy/protocol/request_parser.h"

namespace memshard::proto {
namespace {

bool read(const std::string& line) {
  Request r;
  parse_request_line(line, Limits{}, r);
  return is_read(r);
}

TEST(RequestKind, ReadsLeaveTheKeyAsItWas) {
  for (const char* line : {"get k", "gets k", "mg k", "mg k v", "mg k v f t c k s", "me k"}) {
    EXPECT_TRUE(read(line)) << line;
  }
}

TEST(RequestKind, EverythingThatMayChangeTheKeyIsNoRead) {
  for (const char* line : {"set k 0 0 1", "add k 0 0 1", "cas k 0 0 1 5", "delete k", "incr k 1",
                           "touch k 10", "gat 10 k", "gats 10 k", "mg k T10", "mg k v N30",
                           "mg k E5", "mg k R30", "ms k 1", "md k", "ma k"}) {
    EXPECT_FALSE(read(line)) << line;
  }
}

TEST(RequestKind, AFlagTheModelDoesNotKnowIsNoRead) {
  Request r;
  parse_request_line("mg k v zz", Limits{}, r);
  EXPECT_TRUE(r.unmodeled_flags);
  EXPECT_FALSE(is_read(r)) << "an unknown flag may write: treated as a write everywhere";
}

TEST(RequestKind, RefusableWrites) {
  const auto refusable = [](const std::string& line) {
    Request r;
    parse_request_line(line, Limits{}, r);
    return may_be_refused(r);
  };
  EXPECT_TRUE(refusable("add k 0 0 1"));
  EXPECT_TRUE(refusable("cas k 0 0 1 7"));
  EXPECT_TRUE(refusable("ms k 1 ME"));
  EXPECT_TRUE(refusable("ms k 1 C7"));
  EXPECT_FALSE(refusable("set k 0 0 1"));
  EXPECT_FALSE(refusable("ms k 1"));
  EXPECT_FALSE(refusable("delete k"));
}

TEST(RequestKind, CommandClasses) {
  EXPECT_TRUE(is_meta(Command::meta_get));
  EXPECT_TRUE(is_meta(Command::meta_debug));
  EXPECT_FALSE(is_meta(Command::meta_noop)) << "mn has no key and no meta reply of its own";
  EXPECT_FALSE(is_meta(Command::get));
  EXPECT_TRUE(is_storage(Command::cas));
  EXPECT_TRUE(is_storage(Command::meta_set));
  EXPECT_FALSE(is_storage(Command::incr));
  EXPECT_TRUE(is_multi_key(Command::gats));
  EXPECT_FALSE(is_multi_key(Command::meta_get));
}

}  // namespace
}  // namespace memshard::proto
