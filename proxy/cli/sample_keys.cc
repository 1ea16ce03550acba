#include "proxy/cli/sample_keys.h"

#include "proxy/protocol/metadump.h"

namespace memshard::proxy {

std::string uri_decode(std::string_view text) {
  return proto::uri_decode(text);
}

std::vector<std::string> read_sample_keys(std::istream& in) {
  std::vector<std::string> keys;
  bool dump = false;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (auto item = proto::parse_metadump_line(line)) {
      dump = true;
      keys.push_back(std::move(item->key));
    } else if (!(dump && line == "END")) {
      keys.push_back(line);
    }
  }
  return keys;
}

}  // namespace memshard::proxy
