// Working space for handling one client request, shared by all the client
// connections of a worker. A request is parsed, routed and sent within one
// call on the worker's thread, so per-connection copies of this space would
// only hold memory while their clients sit idle (thousands of them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/request_parser.h"

namespace memshard::proxy {

struct RequestScratch {
  proto::Request request;  // views into `line`
  std::string line;        // the request line, terminator removed
  std::string text;        // lines built for servers, local replies
  // Splitting a multi-get: per server index, its fragment (-1: none yet);
  // per fragment, its server; the keys of one fragment.
  std::vector<int32_t> fragment_of_server;
  std::vector<size_t> server_of_fragment;
  std::vector<std::string_view> key_views;
  // Splitting a multi-get by route (routing pools): per key, its route.
  std::vector<uint32_t> route_of_key;
};

}  // namespace memshard::proxy
