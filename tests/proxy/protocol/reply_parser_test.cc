// Server reply lines. Every "accepted" line below is one memcached 1.6.18
// sent (to get/gets/gat, set..., delete, incr, touch, mg/ms/md/ma/me/mn,
// flush_all, version and to malformed requests).
#include "proxy/protocol/reply_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace memshard::proto {
namespace {

ReplyKind kind_of(std::string_view line) {
  return parse_reply_line(line).kind;
}

TEST(ReplyParser, Value) {
  ReplyLine r = parse_reply_line("VALUE a 0 1");
  EXPECT_EQ(r.kind, ReplyKind::value);
  EXPECT_EQ(r.key, "a");
  EXPECT_EQ(r.data_bytes, 3u);
  r = parse_reply_line("VALUE key 4294967295 1048576 18446744073709551615");  // gets
  EXPECT_EQ(r.kind, ReplyKind::value);
  EXPECT_EQ(r.key, "key");
  EXPECT_EQ(r.data_bytes, 1048578u);
  EXPECT_EQ(parse_reply_line("VALUE a 0 0").data_bytes, 2u);
}

TEST(ReplyParser, BadValue) {
  for (std::string_view line :
       {"VALUE", "VALUE ", "VALUE a", "VALUE a 0", "VALUE a 0 ", "VALUE a x 1", "VALUE a 0 x",
        "VALUE a -1 1", "VALUE a 0 -1", "VALUE a 0 1 x", "VALUE a 0 1 2 3", "VALUE a 0 1 ",
        "VALUE  a 0 1", "VALUE a  0 1", "VALUE a 4294967296 1", "VALUE a 0 4294967296",
        "VALUE a 0 1 18446744073709551616", "VALUE a 0 +1",
        // Past what 64 bits hold, where a parser that checks only against
        // 32 bits at the end would wrap around.
        "VALUE a 99999999999999999999 1", "VALUE a 0 36893488147419103233",
        "VALUE a 0 1 99999999999999999999"}) {
    EXPECT_EQ(kind_of(line), ReplyKind::invalid) << line;
  }
}

TEST(ReplyParser, EndAndNoop) {
  EXPECT_EQ(kind_of("END"), ReplyKind::end);
  EXPECT_EQ(kind_of("MN"), ReplyKind::meta_noop);
  EXPECT_EQ(kind_of("END "), ReplyKind::invalid);
  EXPECT_EQ(kind_of("MN x"), ReplyKind::invalid);
}

TEST(ReplyParser, MetaValue) {
  ReplyLine r = parse_reply_line("VA 1");
  EXPECT_EQ(r.kind, ReplyKind::meta_value);
  EXPECT_EQ(r.data_bytes, 3u);
  // mg with v k O c f t s; ma with v; a base64 key echoed with k.
  for (std::string_view line :
       {"VA 1 kk Oabc c56 f0 t1 s1", "VA 1 Oxx kn t-1 c59", "VA 2", "VA 1 kQUFB b"}) {
    EXPECT_EQ(kind_of(line), ReplyKind::meta_value) << line;
  }
  for (std::string_view line : {"VA", "VA ", "VA x", "VA -1", "VA 1x"}) {
    EXPECT_EQ(kind_of(line), ReplyKind::invalid) << line;
  }
}

TEST(ReplyParser, OneLineReplies) {
  for (std::string_view line : {"STORED",
                                "NOT_STORED",
                                "EXISTS",
                                "NOT_FOUND",
                                "DELETED",
                                "TOUCHED",
                                "OK",
                                "0",
                                "5",
                                "18446744073709551615",
                                "HD",
                                "HD c56 kk Oabc",
                                "EN",
                                "EN kmissing Oop",
                                "NF",
                                "NF Oab kk",
                                "NS",
                                "EX",
                                "ME n exp=-1 la=1 cas=60 fetch=no cls=1 size=61",
                                "ME QUFB exp=-1 la=0 cas=62 fetch=yes cls=1 size=63",
                                "ERROR",
                                "CLIENT_ERROR bad command line format",
                                "CLIENT_ERROR bad data chunk",
                                "SERVER_ERROR object too large for cache",
                                "SERVER_ERROR out of memory storing object",
                                "VERSION 1.6.18",
                                "ERROR hot and warm pcts must not exceed 80"}) {
    EXPECT_EQ(kind_of(line), ReplyKind::line) << line;
  }
}

TEST(ReplyParser, Invalid) {
  for (std::string_view line :
       {"", " ", "STORED ", "stored", "STOREDX", "HDX", "ENX", "ME", "ME ", "ME  x", "5 ",
        "18446744073709551616", "-1", "+1", "VALUES a 0 1", "STAT pid 1", "RESET", "\r",
        "ERROR: shutdown not enabled" /* never forwarded */}) {
    EXPECT_EQ(kind_of(line), ReplyKind::invalid) << line;
  }
  EXPECT_EQ(kind_of(std::string(kMaxReplyLineLength + 1, '1')), ReplyKind::invalid);
  EXPECT_EQ(kind_of("SERVER_ERROR " + std::string(kMaxReplyLineLength - 13, 'x')), ReplyKind::line);
}

// A meta command is answered in codes, a classic one in words; errors and
// OK (flush_all's, and a meta write's on a server run with
// meta_response_old) answer either (a backend refuses a reply of the other
// kind).
TEST(ReplyParser, Family) {
  for (std::string_view line : {"HD", "HD c56 kk Oabc", "EN", "EN kmissing Oop", "NF", "NF Oab kk",
                                "NS", "EX", "ME n exp=-1 la=1 cas=60 fetch=no cls=1 size=61"}) {
    EXPECT_EQ(reply_family(line), ReplyFamily::meta) << line;
  }
  for (std::string_view line : {"STORED", "NOT_STORED", "EXISTS", "NOT_FOUND", "DELETED", "TOUCHED",
                                "0", "18446744073709551615", "VERSION 1.6.18"}) {
    EXPECT_EQ(reply_family(line), ReplyFamily::classic) << line;
  }
  for (std::string_view line :
       {"ERROR", "ERROR hot and warm pcts must not exceed 80", "CLIENT_ERROR bad data chunk",
        "SERVER_ERROR out of memory", "OK"}) {
    EXPECT_EQ(reply_family(line), ReplyFamily::either) << line;
  }
}

}  // namespace
}  // namespace memshard::proto
