// What kind of thing a parsed request does, asked by routes and clients
// that treat kinds differently (reads go to one copy, writes to all; the
// hot-key cache drops a key a request changes). One place, so that every
// caller agrees on what a read is.
#pragma once

#include "proxy/protocol/request.h"

namespace memshard::proto {

// The meta commands (mg ms md ma me): their replies are meta replies.
bool is_meta(Command c);

// Classic storage and ms: the request carries a value.
bool is_storage(Command c);

// A request that leaves its key as it found it: get, gets, me, and an mg
// without T (touch), N (create on a miss), E (a new CAS for what it
// creates) or a flag the model does not know (which may do any of these).
// Everything else that names a key changes it, or may.
bool is_read(const Request& r);
inline bool changes_key(const Request& r) {
  return !is_read(r);
}

// A request whose reply may carry its key's value: get, gets, gat, gats,
// mg (whatever else it does). Its server must not answer it with a value
// the server may hold stale (proxy/backends/repair_log.h).
bool returns_value(Command c);

// A write whose success leaves the key without any value it held before:
// set, cas, delete, md, ms in set mode.
bool replaces_value(const Request& r);

// Retrievals (get, gets, gat, gats): one request, any number of keys.
bool is_multi_key(Command c);

// A write the server may refuse depending on what it holds: add, cas, an
// ms in add mode or with a CAS.
bool may_be_refused(const Request& r);

}  // namespace memshard::proto
