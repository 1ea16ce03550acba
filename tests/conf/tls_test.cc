// The TLS directives (conf/tls.cc): what they set, and the combinations
// refused with the file, line and directive named.
#include <gtest/gtest.h>

#include "conf_test_util.h"

namespace memshard::conf {
namespace {

using testing::only_error;
using testing::only_pool;
using testing::pool;

TEST(ConfTls, OffUnlessAsked) {
  const PoolConfig p = only_pool(pool());
  EXPECT_FALSE(p.tls.listens());
  EXPECT_FALSE(p.tls.server_tls);
  EXPECT_TRUE(p.tls.server_verify);
  EXPECT_EQ(p.tls.min_version, "1.2");
}

TEST(ConfTls, BothSides) {
  const PoolConfig p = only_pool(
      pool("  tls_cert_file: /etc/m/cert.pem\n  tls_key_file: key.pem\n"
           "  tls_ca_file: ca.pem\n  tls_verify_client: true\n  tls_min_version: 1.3\n"
           "  server_tls: true\n  server_tls_ca_file: sca.pem\n  server_tls_cert_file: c.pem\n"
           "  server_tls_key_file: k.pem\n  server_tls_name: cache.internal\n"
           "  server_tls_verify: false\n"));
  EXPECT_TRUE(p.tls.listens());
  EXPECT_EQ(p.tls.cert_file, "/etc/m/cert.pem");
  EXPECT_EQ(p.tls.key_file, "key.pem");
  EXPECT_EQ(p.tls.ca_file, "ca.pem");
  EXPECT_TRUE(p.tls.verify_client);
  EXPECT_EQ(p.tls.min_version, "1.3");
  EXPECT_TRUE(p.tls.server_tls);
  EXPECT_EQ(p.tls.server_ca_file, "sca.pem");
  EXPECT_EQ(p.tls.server_cert_file, "c.pem");
  EXPECT_EQ(p.tls.server_key_file, "k.pem");
  EXPECT_EQ(p.tls.server_name, "cache.internal");
  EXPECT_FALSE(p.tls.server_verify);
  EXPECT_EQ(p.tls.line_of("tls_key_file"), 4);
}

TEST(ConfTls, ACertificateNeedsItsKey) {
  const ConfigError e = only_error(pool("  tls_cert_file: cert.pem\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.directive, "tls_cert_file");
  EXPECT_NE(e.message.find("tls_key_file"), std::string::npos) << e.message;
}

TEST(ConfTls, VerifyingClientsNeedsTheirCa) {
  const ConfigError e = only_error(
      pool("  tls_cert_file: c.pem\n  tls_key_file: k.pem\n  tls_verify_client: true\n"));
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.directive, "tls_verify_client");
}

TEST(ConfTls, UnixSocketsStayPlain) {
  const ConfigError e = only_error(
      "alpha:\n  listen: /tmp/m.sock\n  tls_cert_file: c.pem\n  tls_key_file: k.pem\n"
      "  servers:\n   - 127.0.0.1:11211:1\n");
  EXPECT_EQ(e.directive, "tls_cert_file");
  EXPECT_NE(e.message.find("unix socket"), std::string::npos) << e.message;
}

TEST(ConfTls, BadValues) {
  ConfigError e =
      only_error(pool("  tls_cert_file: c\n  tls_key_file: k\n  tls_min_version: 1.1\n"));
  EXPECT_EQ(e.directive, "tls_min_version");
  EXPECT_EQ(e.message, "expected 1.2 or 1.3, found \"1.1\"");
  e = only_error(pool("  server_tls: maybe\n"));
  EXPECT_EQ(e.directive, "server_tls");
}

TEST(ConfTls, ServerSideDirectivesNeedServerTls) {
  const ConfigError e = only_error(pool("  server_tls_name: x\n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.directive, "server_tls_name");
  EXPECT_EQ(e.message, "has no effect without server_tls: true");
}

TEST(ConfTls, OwnCertificateForServersComesInPairs) {
  const ConfigError e = only_error(pool("  server_tls: true\n  server_tls_key_file: k\n"));
  EXPECT_EQ(e.directive, "server_tls_key_file");
}

}  // namespace
}  // namespace memshard::conf
