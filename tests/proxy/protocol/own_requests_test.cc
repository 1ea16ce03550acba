// own_requests.h: the requests memshard sends on its own carry any key a
// binary client can send, as one token.
#include "proxy/protocol/own_requests.h"

#include <gtest/gtest.h>

#include <string>

namespace memshard::proto {
namespace {

TEST(OwnRequests, PlainKeysTravelAsTheyAre) {
  std::string out;
  ASSERT_TRUE(append_delete("user:1", false, out));
  EXPECT_EQ(out, "md user:1\r\n");
  out.clear();
  ASSERT_TRUE(append_delete("user:1", true, out));
  EXPECT_EQ(out, "md user:1 q\r\n");
  out.clear();
  ASSERT_TRUE(append_lookup("user:1", false, nullptr, out));
  EXPECT_EQ(out, "mg user:1 f t v\r\n");
  out.clear();
  const int64_t exptime = 60;
  ASSERT_TRUE(append_lookup("user:1", true, &exptime, out));
  EXPECT_EQ(out, "mg user:1 c f t v T60\r\n");
  out.clear();
  ASSERT_TRUE(append_touch("user:1", 30, out));
  EXPECT_EQ(out, "mg user:1 T30 q\r\n");
}

// The bug the builders fixed: "md a b\r\n" deletes "a", another key.
TEST(OwnRequests, AKeyWithASpaceTravelsBase64AsOneToken) {
  std::string out;
  ASSERT_TRUE(append_delete("a b", true, out));
  EXPECT_EQ(out, "md YSBi b q\r\n");
  out.clear();
  ASSERT_TRUE(append_lookup(std::string("k\r\nset x 0 0 1", 14), false, nullptr, out));
  EXPECT_EQ(out.find("\r\n"), out.size() - 2) << "one line: " << out;
  EXPECT_NE(out.find(" b"), std::string::npos);
}

// A store that one of several racing writers wins: an add, or a
// compare-and-swap on the CAS read.
TEST(OwnRequests, AStoreOnceIsAnAddOrACompareAndSwap) {
  std::string out;
  ASSERT_TRUE(append_store_once("lease:1", "walking a 0 0", 6, 0, out));
  EXPECT_EQ(out, "ms lease:1 13 T6 ME\r\nwalking a 0 0\r\n");
  out.clear();
  ASSERT_TRUE(append_store_once("lease:1", "done a 3 1", 40, 77, out));
  EXPECT_EQ(out, "ms lease:1 10 T40 C77\r\ndone a 3 1\r\n");
  out.clear();
  ASSERT_TRUE(append_store_once("a b", "v", 6, 0, out));
  EXPECT_EQ(out, "ms YSBi 1 b T6 ME\r\nv\r\n");
}

TEST(OwnRequests, KeysWithoutAMetaFormAreRefused) {
  std::string out = "kept";
  EXPECT_FALSE(append_delete(std::string(251, 'k'), false, out));
  EXPECT_FALSE(append_delete(std::string(187, ' '), false, out)) << "base64 past 250 bytes";
  EXPECT_EQ(out, "kept");
  EXPECT_TRUE(append_delete(std::string(186, ' '), false, out));
}

TEST(OwnRequests, FixedRequests) {
  std::string out;
  append_noop(out);
  append_version(out);
  append_metadump(out);
  EXPECT_EQ(out, "mn\r\nversion\r\nlru_crawler metadump all\r\n");
}

}  // namespace
}  // namespace memshard::proto
