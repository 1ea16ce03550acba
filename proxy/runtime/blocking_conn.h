// A blocking connection to one server, for the work done off the workers'
// loops (the background migration's walk): every wait bounded by a timeout.
#pragma once

#include <string>
#include <string_view>

#include "proxy/routes/topology.h"

namespace memshard::proxy {

class BlockingConn {
 public:
  // Connects to the first of the server's addresses that accepts.
  BlockingConn(const ServerInfo& server, int timeout_ms);
  ~BlockingConn();
  BlockingConn(const BlockingConn&) = delete;
  BlockingConn& operator=(const BlockingConn&) = delete;

  bool ok() const { return fd_ >= 0; }
  bool send(std::string_view bytes);
  // One line, without its "\r\n" or "\n" (metadump's item lines end in
  // a bare "\n", its END and every other reply in "\r\n").
  bool read_line(std::string& line);
  bool read_exact(size_t n, std::string& out);

 private:
  bool wait(short events);
  bool fill();
  void compact();
  bool fail();

  int fd_ = -1;
  int timeout_ms_;
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace memshard::proxy
