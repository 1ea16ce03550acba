#include "proxy/protocol/retrieval_reply.h"

#include <gtest/gtest.h>

namespace memshard::proto {
namespace {

TEST(RetrievalReply, ClassicBlocksInOrder) {
  const std::string reply = "VALUE a 0 1\r\nx\r\nVALUE bb 5 3 77\r\nyyy\r\nEND\r\n";
  auto blocks = parse_value_blocks(reply);
  ASSERT_TRUE(blocks);
  ASSERT_EQ(blocks->size(), 2u);
  EXPECT_EQ((*blocks)[0].key, "a");
  EXPECT_EQ((*blocks)[0].block, "VALUE a 0 1\r\nx\r\n");
  EXPECT_EQ((*blocks)[1].key, "bb");
  EXPECT_EQ((*blocks)[1].block, "VALUE bb 5 3 77\r\nyyy\r\n");
  ASSERT_TRUE(parse_value_blocks("END\r\n"));
  EXPECT_TRUE(parse_value_blocks("END\r\n")->empty());
}

TEST(RetrievalReply, NotARetrievalReply) {
  EXPECT_FALSE(parse_value_blocks("SERVER_ERROR backend timeout\r\n"));
  EXPECT_FALSE(parse_value_blocks("VALUE a 0 5\r\nxx\r\nEND\r\n"));  // cut short
  EXPECT_FALSE(parse_value_blocks("VALUE a 0 1\r\nx\r\n"));          // no END
  EXPECT_FALSE(parse_value_blocks("END\r\nEND\r\n"));                // trailing bytes
}

TEST(RetrievalReply, MetaHitBecomesTheClassicBlock) {
  const std::string reply = "VA 3 f7 t99 c12\r\nabc\r\n";
  auto v = parse_meta_value(reply);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->flags, "7");
  EXPECT_EQ(v->ttl, "99");
  EXPECT_EQ(v->cas, "12");
  EXPECT_EQ(v->data, "abc");
  EXPECT_EQ(classic_block("k", *v, false), "VALUE k 7 3\r\nabc\r\n");
  EXPECT_EQ(classic_block("k", *v, true), "VALUE k 7 3 12\r\nabc\r\n");
  EXPECT_FALSE(parse_meta_value("EN\r\n"));
  EXPECT_FALSE(parse_meta_value("VA 9 f0\r\nabc\r\n"));  // cut short
}

TEST(RetrievalReply, CopyIsAnAddWithTheRemainingTtl) {
  MetaValue v;
  v.flags = "7";
  v.ttl = "99";
  v.data = "abc";
  std::string out;
  ASSERT_TRUE(append_copy_request("k", v, false, out));
  EXPECT_EQ(out, "ms k 3 c T99 F7 ME\r\nabc\r\n");
  v.ttl = "-1";  // no expiry: T left out, memcached's default (never)
  out.clear();
  ASSERT_TRUE(append_copy_request("k", v, true, out));
  EXPECT_EQ(out, "ms k 3 c F7 ME q\r\nabc\r\n");
}

}  // namespace
}  // namespace memshard::proto

namespace memshard::proto {
TEST(RetrievalReply, ACopysAnswerNamesItsCas) {
  EXPECT_EQ(copied_cas("HD c4711\r\n"), 4711u);
  EXPECT_EQ(copied_cas("HD k c12 b"), 12u);
  EXPECT_EQ(copied_cas("HD\r\n"), std::nullopt);
  EXPECT_EQ(copied_cas("NS\r\n"), std::nullopt);
  EXPECT_EQ(copied_cas("HD cx\r\n"), std::nullopt);
}
}  // namespace memshard::proto
