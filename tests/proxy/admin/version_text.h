// memshard's own version as the `version` command tells it
// ("VERSION <protocol>-memshard-<version>\r\n"): what the stats renderers
// must report as theirs.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "proxy/protocol/version.h"

namespace memshard::proxy::testing {

inline std::string memshard_version() {
  const std::string reply(proto::version_reply());
  constexpr std::string_view kMarker = "-memshard-";
  const size_t at = reply.find(kMarker);
  EXPECT_NE(at, std::string::npos) << reply;
  if (at == std::string::npos) return {};
  return reply.substr(at + kMarker.size(), reply.size() - at - kMarker.size() - 2);
}

}  // namespace memshard::proxy::testing
