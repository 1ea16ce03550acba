// reply_status.h: every reply a memcached server (or the proxy in its name)
// writes gets the status routes decide on, in all three protocols.
#include "proxy/protocol/reply_status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "proxy/protocol/replies.h"

namespace memshard::proto {
namespace {

TEST(ReplyStatus, TextAndMetaWordsMeanTheSame) {
  const std::vector<std::pair<std::string, ReplyStatus>> cases = {
      {"VALUE k 0 1", ReplyStatus::hit},
      {"VALUE k 0 1 55", ReplyStatus::hit},
      {"VA 1 f0 t-1", ReplyStatus::hit},
      {"END", ReplyStatus::miss},
      {"EN", ReplyStatus::miss},
      {"STORED", ReplyStatus::stored},
      {"NOT_STORED", ReplyStatus::not_stored},
      {"NS", ReplyStatus::not_stored},
      {"EXISTS", ReplyStatus::exists},
      {"EX c5", ReplyStatus::exists},
      {"NOT_FOUND", ReplyStatus::not_found},
      {"NF", ReplyStatus::not_found},
      {"DELETED", ReplyStatus::deleted},
      {"TOUCHED", ReplyStatus::touched},
      {"HD", ReplyStatus::done},
      {"HD c12 Oop", ReplyStatus::done},
      {"OK", ReplyStatus::ok},
      {"MN", ReplyStatus::ok},
      {"42", ReplyStatus::number},
      {"18446744073709551615", ReplyStatus::number},
      {"VERSION 1.6.18", ReplyStatus::version},
      {"SERVER_ERROR out of memory storing object", ReplyStatus::server_error},
      {"CLIENT_ERROR bad data chunk", ReplyStatus::client_error},
      {"ERROR", ReplyStatus::error},
      {"ERROR Too many open connections", ReplyStatus::error},
      {"STAT pid 1", ReplyStatus::other},
      {"", ReplyStatus::other},
      {"4a", ReplyStatus::other},
      {"STOREDX", ReplyStatus::other},
  };
  for (const auto& [line, status] : cases) {
    EXPECT_EQ(status_name(classify_reply_line(line)), status_name(status)) << line;
  }
}

TEST(ReplyStatus, TheProxysOwnFailuresAreServerErrors) {
  for (std::string_view own :
       {reply::own::kBackendTimeout, reply::own::kBackendUnavailable, reply::own::kBackendClosed,
        reply::own::kBackendGarbled, reply::own::kNoDescriptors, reply::own::kNoMemory}) {
    EXPECT_TRUE(failed(classify_reply_line(own))) << own;
  }
}

TEST(ReplyStatus, BinaryStatusesMapToTheSameValues) {
  EXPECT_EQ(classify_binary_status(0x0000), ReplyStatus::done);
  EXPECT_EQ(classify_binary_status(0x0001), ReplyStatus::not_found);
  EXPECT_EQ(classify_binary_status(0x0002), ReplyStatus::exists);
  EXPECT_EQ(classify_binary_status(0x0005), ReplyStatus::not_stored);
  EXPECT_EQ(classify_binary_status(0x0003), ReplyStatus::server_error);  // too large
  EXPECT_EQ(classify_binary_status(0x0086), ReplyStatus::server_error);  // the proxy's own
  EXPECT_EQ(classify_binary_status(0x0006), ReplyStatus::client_error);  // non-numeric
  EXPECT_EQ(classify_binary_status(0x0081), ReplyStatus::error);
  EXPECT_EQ(classify_binary_status(0x7777), ReplyStatus::other);
}

TEST(ReplyStatus, PredicatesPartitionWhatRoutesAsk) {
  EXPECT_TRUE(succeeded(ReplyStatus::stored));
  EXPECT_TRUE(succeeded(ReplyStatus::done));
  EXPECT_TRUE(succeeded(ReplyStatus::number));
  EXPECT_FALSE(succeeded(ReplyStatus::not_stored));
  EXPECT_FALSE(succeeded(ReplyStatus::server_error));
  EXPECT_TRUE(failed(ReplyStatus::server_error));
  EXPECT_FALSE(failed(ReplyStatus::client_error)) << "the request's fault: no failover";
  EXPECT_TRUE(missed(ReplyStatus::miss));
  EXPECT_FALSE(missed(ReplyStatus::not_found));
}

}  // namespace
}  // namespace memshard::proto
