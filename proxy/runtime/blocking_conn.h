// A blocking connection to one server, for the work done off the workers'
// loops (the background migration's walk): every wait bounded by a timeout.
#pragma once

#include <string>
#include <string_view>

#include "proxy/protocol/retrieval_reply.h"
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

  enum class Lookup { hit, miss, unsendable, failed };
  // Asks for `key` with a meta get (its CAS too when `with_cas`) and reads
  // the whole reply into `reply`; on a hit, `value` views into it.
  // `unsendable`: the key has no meta form. `failed`: no answer, an answer
  // other than a value or a miss, or a value over `max_bytes` (which closes
  // the connection: its unread bytes would be taken for the next reply).
  Lookup meta_get(std::string_view key, bool with_cas, size_t max_bytes, std::string& reply,
                  proto::MetaValue& value);

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
