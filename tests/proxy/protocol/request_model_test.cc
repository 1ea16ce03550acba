// The protocol-neutral fields of Request, as the text and meta parser fills
// them. Numbers are read as memcached reads them (numbers.h).
#include <string>

#include "proxy/protocol/request.h"
#include "tests/proxy/protocol/request_test_util.h"

namespace memshard::proto {
namespace {

using Model = RequestTest;

TEST_F(Model, ClassicStorage) {
  {
    const Request& r = parse("set k 5 100 3");
    EXPECT_EQ(r.action, Action::forward);
    EXPECT_EQ(r.mode, Mode::set);
    EXPECT_EQ(r.flags, 5u);
    EXPECT_EQ(r.exptime_value, 100);
    EXPECT_TRUE(r.has_exptime);
    EXPECT_FALSE(r.has_cas);
    EXPECT_EQ(r.value_length(), 3u);
    EXPECT_FALSE(r.noreply);
    EXPECT_FALSE(r.quiet);
    EXPECT_TRUE(r.meta_flags.empty());
  }
  EXPECT_EQ(parse("add k 0 0 1").mode, Mode::add);
  EXPECT_EQ(parse("replace k 0 0 1").mode, Mode::replace);
  EXPECT_EQ(parse("append k 0 0 1").mode, Mode::append);
  EXPECT_EQ(parse("prepend k 0 0 1").mode, Mode::prepend);
  {
    const Request& r = parse("cas k 4294967295 -1 0 18446744073709551615 noreply");
    EXPECT_EQ(r.action, Action::forward);
    EXPECT_EQ(r.mode, Mode::set);
    EXPECT_EQ(r.flags, 4294967295u);
    EXPECT_EQ(r.exptime_value, -1);
    EXPECT_TRUE(r.has_cas);
    EXPECT_EQ(r.cas, 18446744073709551615u);
    EXPECT_EQ(r.value_length(), 0u);
    EXPECT_TRUE(r.noreply);
    EXPECT_TRUE(r.quiet);
  }
  // memcached's safe_strtol narrows to 32 bits: 4294967297 is 1.
  EXPECT_EQ(parse("set k 0 4294967297 1").exptime_value, 1);
}

TEST_F(Model, ClassicRetrievalTouchAndArithmetic) {
  EXPECT_FALSE(parse("get a b").has_exptime);
  EXPECT_FALSE(parse("gets a").has_exptime);
  {
    const Request& r = parse("gat 10 a b");
    EXPECT_TRUE(r.has_exptime);
    EXPECT_EQ(r.exptime_value, 10);
    EXPECT_EQ(r.exptime, "10");  // the token, still there for the fragments
  }
  EXPECT_EQ(parse("gats -5 a").exptime_value, -5);
  {
    const Request& r = parse("touch k -5 noreply");
    EXPECT_EQ(r.action, Action::forward);
    EXPECT_EQ(r.exptime_value, -5);
    EXPECT_TRUE(r.has_exptime);
    EXPECT_EQ(r.mode, Mode::none);
    EXPECT_TRUE(r.noreply);
  }
  {
    const Request& r = parse("incr k 18446744073709551615");
    EXPECT_EQ(r.mode, Mode::incr);
    EXPECT_EQ(r.delta, 18446744073709551615u);
    EXPECT_FALSE(r.noreply);
  }
  {
    const Request& r = parse("decr k 3 noreply");
    EXPECT_EQ(r.mode, Mode::decr);
    EXPECT_EQ(r.delta, 3u);
    EXPECT_TRUE(r.noreply);
  }
  EXPECT_TRUE(parse("delete k noreply").noreply);
  EXPECT_TRUE(parse("delete k 0 noreply").noreply);
  EXPECT_FALSE(parse("delete k 0").noreply);
  EXPECT_EQ(parse("delete k").mode, Mode::none);
}

TEST_F(Model, FlushAllDelay) {
  EXPECT_EQ(parse("flush_all 30").exptime_value, 30);
  EXPECT_TRUE(parse("flush_all 30 noreply").has_exptime);
  EXPECT_FALSE(parse("flush_all").has_exptime);
  EXPECT_FALSE(parse("flush_all noreply").has_exptime);
}

TEST_F(Model, MetaSet) {
  const Request& r = parse("ms k 3 F7 T60 C99 ME q Oab c");
  EXPECT_EQ(r.action, Action::forward);
  EXPECT_EQ(r.mode, Mode::add);
  EXPECT_EQ(r.flags, 7u);
  EXPECT_EQ(r.exptime_value, 60);
  EXPECT_TRUE(r.has_exptime);
  EXPECT_TRUE(r.has_cas);
  EXPECT_EQ(r.cas, 99u);
  EXPECT_EQ(r.opaque, "ab");
  EXPECT_TRUE(r.quiet);
  EXPECT_FALSE(r.noreply);  // q hides HD only
  EXPECT_EQ(r.value_length(), 3u);
  for (char c : std::string_view("FTCMqOc")) EXPECT_TRUE(r.meta_flags.has(c)) << c;
  for (char c : std::string_view("vkbI")) EXPECT_FALSE(r.meta_flags.has(c)) << c;
  EXPECT_FALSE(r.unmodeled_flags);

  EXPECT_EQ(parse("ms k 1").mode, Mode::set);  // the default
  EXPECT_FALSE(parse("ms k 1").has_exptime);
  EXPECT_EQ(parse("ms k 1 MS").mode, Mode::set);
  EXPECT_EQ(parse("ms k 1 MR").mode, Mode::replace);
  EXPECT_EQ(parse("ms k 1 MA").mode, Mode::append);
  EXPECT_EQ(parse("ms k 1 MP").mode, Mode::prepend);
  EXPECT_EQ(parse("ms k 1 MA N30").vivify, 30);
  EXPECT_TRUE(parse("ms k 1 MA N0").has_vivify);
  EXPECT_FALSE(parse("ms k 1 MA").has_vivify);
}

TEST_F(Model, MetaArithmetic) {
  {
    const Request& r = parse("ma n N30 J10 D5 M- v t");
    EXPECT_EQ(r.mode, Mode::decr);
    EXPECT_TRUE(r.has_vivify);
    EXPECT_EQ(r.vivify, 30);
    EXPECT_EQ(r.initial, 10u);
    EXPECT_EQ(r.delta, 5u);
    EXPECT_TRUE(r.meta_flags.has('v'));
    EXPECT_FALSE(r.unmodeled_flags);
  }
  {
    const Request& r = parse("ma n");
    EXPECT_EQ(r.mode, Mode::incr);
    EXPECT_EQ(r.delta, 1u);  // memcached's default
    EXPECT_EQ(r.initial, 0u);
  }
  EXPECT_EQ(parse("ma n MI").mode, Mode::incr);
  EXPECT_EQ(parse("ma n M+").mode, Mode::incr);
  EXPECT_EQ(parse("ma n MD").mode, Mode::decr);
}

TEST_F(Model, MetaGetAndDelete) {
  {
    const Request& r = parse("mg k v f t c k s T30 N5 O123");
    EXPECT_EQ(r.mode, Mode::none);
    EXPECT_EQ(r.exptime_value, 30);
    EXPECT_EQ(r.vivify, 5);
    EXPECT_EQ(r.opaque, "123");
    for (char c : std::string_view("vftcks")) EXPECT_TRUE(r.meta_flags.has(c)) << c;
    EXPECT_FALSE(r.unmodeled_flags);
  }
  {
    const Request& r = parse("md k C5 q");
    EXPECT_TRUE(r.has_cas);
    EXPECT_EQ(r.cas, 5u);
    EXPECT_TRUE(r.quiet);
  }
  {
    // The decoded key is routed; `b` is remembered as a flag.
    const Request& r = parse("mg QUFB b v");
    EXPECT_EQ(r.keys[0], "AAA");
    EXPECT_TRUE(r.meta_flags.has('b'));
  }
}

// What the model cannot say again, and what the server alone judges.
TEST_F(Model, UnmodeledMetaFlags) {
  for (std::string_view line :
       {"mg k x", "mg k T1 T2", "mg k Tx", "ms k 1 MX", "ms k 1 Me", "ma k Mi", "ma k MII",
        "mg k R30", "md k \xff", "mg k E5", "ms k 1 Fz", "ma k D-1", "mg k MS"}) {
    SCOPED_TRACE(std::string(line));
    const Request& r = parse(line);
    EXPECT_EQ(r.action, Action::forward);  // unchanged: the server answers
    EXPECT_TRUE(r.unmodeled_flags);
  }
  EXPECT_EQ(parse("ms k 1 MX").mode, Mode::invalid);
  // Argument-less flags ignore the rest of their token; P and L are
  // proxy hints memcached ignores.
  for (std::string_view line : {"mg k vzz fa", "mg k P1 L2 v", "ms k 1 I", "mg k h l u"}) {
    EXPECT_FALSE(parse(line).unmodeled_flags) << line;
  }
}

TEST_F(Model, ClearedBetweenRequests) {
  parse("ms k 3 F7 T60 C99 ME q Oab N3 c");
  const Request& r = parse("mn");
  EXPECT_EQ(r.mode, Mode::none);
  EXPECT_EQ(r.flags, 0u);
  EXPECT_FALSE(r.has_exptime);
  EXPECT_FALSE(r.has_cas);
  EXPECT_FALSE(r.has_vivify);
  EXPECT_TRUE(r.opaque.empty());
  EXPECT_TRUE(r.meta_flags.empty());
  EXPECT_FALSE(r.unmodeled_flags);
  parse("incr k 5 noreply");
  EXPECT_EQ(parse("ma k").delta, 1u);
  EXPECT_FALSE(parse("get k").noreply);
}

}  // namespace
}  // namespace memshard::proto
