#include "proxy/protocol/request_kind.h"

namespace memshard::proto {

bool is_meta(Command c) {
  switch (c) {
    case Command::meta_get:
    case Command::meta_set:
    case Command::meta_delete:
    case Command::meta_arithmetic:
    case Command::meta_debug:
      return true;
    default:
      return false;
  }
}

bool is_storage(Command c) {
  switch (c) {
    case Command::set:
    case Command::add:
    case Command::replace:
    case Command::append:
    case Command::prepend:
    case Command::cas:
    case Command::meta_set:
      return true;
    default:
      return false;
  }
}

bool is_read(const Request& r) {
  switch (r.command) {
    case Command::get:
    case Command::gets:
    case Command::meta_debug:
    case Command::meta_noop:
      return true;
    case Command::meta_get:
      return !r.meta_flags.has('T') && !r.meta_flags.has('N') && !r.meta_flags.has('E') &&
             !r.has_exptime && !r.has_vivify && !r.unmodeled_flags;
    default:
      return false;
  }
}

bool returns_value(Command c) {
  return is_multi_key(c) || c == Command::meta_get;
}

bool replaces_value(const Request& r) {
  switch (r.command) {
    case Command::set:
    case Command::cas:
    case Command::delete_:
    case Command::meta_delete:
      return true;
    case Command::meta_set:
      return r.mode == Mode::set;
    default:
      return false;
  }
}

bool is_multi_key(Command c) {
  return c == Command::get || c == Command::gets || c == Command::gat || c == Command::gats;
}

bool may_be_refused(const Request& r) {
  switch (r.command) {
    case Command::add:
    case Command::cas:
      return true;
    case Command::meta_set:
      return r.mode == Mode::add || r.has_cas;
    default:
      return false;
  }
}

}  // namespace memshard::proto
