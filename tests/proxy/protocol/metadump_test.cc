#include "proxy/protocol/metadump.h"

#include <gtest/gtest.h>

namespace memshard::proto {
namespace {

TEST(Metadump, ItemLinesAsMemcachedWritesThem) {
  // Lines as memcached 1.6.18 wrote them for three sets.
  auto a = parse_metadump_line("key=a%25b exp=-1 la=1796161828 cas=1 fetch=no cls=1 size=63");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->key, "a%b");
  EXPECT_EQ(a->exp, -1);
  auto b =
      parse_metadump_line("key=plain exp=1796161928 la=1796161828 cas=2 fetch=no cls=1 size=65");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->key, "plain");
  EXPECT_EQ(b->exp, 1796161928);
  auto c = parse_metadump_line("key=k41 exp=-1 la=1796162111 cas=42 fetch=no cls=1 size=58");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->key, "k41");
}

TEST(Metadump, WhatIsNotAnItem) {
  EXPECT_FALSE(parse_metadump_line("END"));
  EXPECT_FALSE(parse_metadump_line("BUSY currently processing crawler request"));
  EXPECT_FALSE(parse_metadump_line("key= exp=-1"));     // no key
  EXPECT_FALSE(parse_metadump_line("key=a exp=soon"));  // bad expiry
  EXPECT_FALSE(parse_metadump_line("key=a"));           // not the dump's shape
  EXPECT_FALSE(parse_metadump_line("key=a b"));
}

TEST(Metadump, AStrayPercentIsKept) {
  // memcached encodes '%' itself; a '%' without two hex digits is as written.
  EXPECT_EQ(parse_metadump_line("key=a%2 exp=-1")->key, "a%2");
  EXPECT_EQ(parse_metadump_line("key=a%zz exp=-1")->key, "a%zz");
  EXPECT_EQ(uri_decode("a%2fb%2F"), "a/b/");
  EXPECT_EQ(uri_decode("%00"), std::string(1, '\0'));
}

}  // namespace
}  // namespace memshard::proto
