#include "proxy/protocol/own_requests.h"

#include "proxy/protocol/meta_codec.h"
#include "proxy/protocol/request_parser.h"

namespace memshard::proto {

namespace {

Request keyed(Command command, std::string_view key) {
  Request r;
  r.command = command;
  r.keys.push_back(key);
  return r;
}

}  // namespace

bool append_delete(std::string_view key, bool quiet, std::string& out) {
  Request r = keyed(Command::meta_delete, key);
  r.quiet = quiet;
  return append_meta_request(r, {}, out);
}

bool append_delete_if(std::string_view key, uint64_t cas, bool quiet, std::string& out) {
  Request r = keyed(Command::meta_delete, key);
  r.quiet = quiet;
  r.cas = cas;
  r.has_cas = true;
  return append_meta_request(r, {}, out);
}

bool append_lookup(std::string_view key, bool with_cas, const int64_t* touch, std::string& out) {
  Request r = keyed(Command::meta_get, key);
  r.meta_flags.add('v');
  r.meta_flags.add('f');
  r.meta_flags.add('t');
  if (with_cas) r.meta_flags.add('c');
  if (touch != nullptr) {
    r.has_exptime = true;
    r.exptime_value = *touch;
  }
  return append_meta_request(r, {}, out);
}

bool append_touch(std::string_view key, int64_t exptime, std::string& out) {
  Request r = keyed(Command::meta_get, key);
  r.has_exptime = true;
  r.exptime_value = exptime;
  r.quiet = true;
  return append_meta_request(r, {}, out);
}

bool append_store_once(std::string_view key, std::string_view value, int64_t exptime, uint64_t cas,
                       std::string& out) {
  Request r = keyed(Command::meta_set, key);
  r.has_exptime = true;
  r.exptime_value = exptime;
  if (cas == 0) {
    r.mode = Mode::add;
  } else {
    r.cas = cas;
    r.has_cas = true;
  }
  r.data_bytes = value.size() + 2;
  return append_meta_request(r, value, out);
}

void append_noop(std::string& out) {
  out.append(kNoop);
}

void append_version(std::string& out) {
  out.append("version\r\n");
}

void append_metadump(std::string& out) {
  out.append("lru_crawler metadump all\r\n");
}

}  // namespace memshard::proto
