#include "proxy/protocol/request_parser.h"

#include <limits>

#include "proxy/protocol/meta.h"
#include "proxy/protocol/numbers.h"
#include "proxy/protocol/replies.h"
#include "proxy/protocol/request_kind.h"
#include "proxy/protocol/tokens.h"

namespace memshard::proto {

void Request::clear() {
  command = {};
  action = {};
  keys.clear();
  args.clear();
  decoded_key.clear();
  exptime = {};
  data_bytes = 0;
  quiet = false;
  error_reply = {};
  swallow = 0;
  invalidate_key = false;
  foreign = false;
  key_base64 = false;
  raw_key = {};
  mode = Mode::none;
  flags = 0;
  exptime_value = 0;
  has_exptime = false;
  cas = 0;
  has_cas = false;
  delta = 1;
  initial = 0;
  vivify = 0;
  has_vivify = false;
  opaque = {};
  noreply = false;
  meta_flags.clear();
  unmodeled_flags = false;
}

namespace {

struct CommandWord {
  std::string_view word;
  Command command;
};

// memcached compares command words exactly (case-sensitive). "bget" is an
// undocumented alias of get that memcached 1.6.18 still answers.
constexpr CommandWord kCommandWords[] = {
    {"get", Command::get},
    {"gets", Command::gets},
    {"gat", Command::gat},
    {"gats", Command::gats},
    {"bget", Command::get},
    {"set", Command::set},
    {"add", Command::add},
    {"replace", Command::replace},
    {"append", Command::append},
    {"prepend", Command::prepend},
    {"cas", Command::cas},
    {"delete", Command::delete_},
    {"incr", Command::incr},
    {"decr", Command::decr},
    {"touch", Command::touch},
    {"mg", Command::meta_get},
    {"ms", Command::meta_set},
    {"md", Command::meta_delete},
    {"ma", Command::meta_arithmetic},
    {"me", Command::meta_debug},
    {"mn", Command::meta_noop},
    {"version", Command::version},
    {"verbosity", Command::verbosity},
    {"quit", Command::quit},
    {"stats", Command::stats},
    {"flush_all", Command::flush_all},
};

bool find_command(std::string_view word, Command& command) {
  for (const CommandWord& c : kCommandWords) {
    if (c.word == word) {
      command = c.command;
      return true;
    }
  }
  return false;
}

// Classic commands: the last token "noreply" silences every reply.
void read_noreply(const LineTokens& t, Request& out) {
  out.quiet = t.last_is_noreply();
  out.noreply = out.quiet;
}

void set_exptime(Request& out, int32_t exptime) {
  out.exptime_value = exptime;
  out.has_exptime = true;
}

Mode storage_mode(Command command) {
  switch (command) {
    case Command::add:
      return Mode::add;
    case Command::replace:
      return Mode::replace;
    case Command::append:
      return Mode::append;
    case Command::prepend:
      return Mode::prepend;
    default:
      return Mode::set;  // set, and cas: a set that compares
  }
}

// An error of a classic command that honours noreply: memcached suppresses
// it (out_string() under noreply), but still swallows the data.
void answer_classic(Request& out, std::string_view text, uint64_t swallow = 0) {
  reply::answer(out, out.quiet ? std::string_view{} : text, swallow);
}

// get/gets/bget <key>+, gat/gats <exptime> <key>+. memcached checks the keys
// in order and, on one longer than 250 bytes, drops the values it already
// found and answers only the error; so does the proxy, before forwarding.
// `cursor` is past the command word. The keys are read straight off the
// line, which LineTokens would cap at 23 tokens (memcached reads a get's
// keys past its token limit too), and a multi-get is the line with the
// most tokens by far: it is tokenised once.
void parse_retrieval(TokenCursor& cursor, Request& out) {
  const bool touches = out.command == Command::gat || out.command == Command::gats;
  if (touches) {
    if (!cursor.next(out.exptime)) return reply::answer(out, reply::kError);
    int32_t exptime = 0;
    if (!parse_mc_int32(out.exptime, exptime)) return reply::answer(out, reply::kBadExptime);
    set_exptime(out, exptime);
  }
  std::string_view token;
  while (cursor.next(token)) {
    if (token.size() > kMaxKeyLength) return reply::answer(out, reply::kBadFormat);
    out.keys.push_back(token);
  }
  // "get" alone is not a command memcached knows; "gat 10" names no key,
  // and memcached answers an empty result.
  if (out.keys.empty()) return reply::answer(out, touches ? reply::kEnd : reply::kError);
  out.action = Action::multi_get;
}

// <cmd> <key> <flags> <exptime> <bytes> [noreply], cas adds <cas unique>.
// A sixth (cas: seventh) token that is not "noreply" is ignored.
void parse_storage(const LineTokens& t, const Limits& limits, Request& out) {
  const size_t arity = out.command == Command::cas ? 7 : 6;
  if (t.ntokens() != arity && t.ntokens() != arity + 1) return reply::answer(out, reply::kError);
  read_noreply(t, out);
  if (t.token[1].size() > kMaxKeyLength) return answer_classic(out, reply::kBadFormat);
  uint32_t flags = 0;
  int32_t exptime = 0;
  int32_t value_length = 0;
  uint64_t cas_unique = 0;
  if (!parse_mc_uint32(t.token[2], flags) || !parse_mc_int32(t.token[3], exptime) ||
      !parse_mc_int32(t.token[4], value_length)) {
    return answer_classic(out, reply::kBadFormat);
  }
  if (out.command == Command::cas && !parse_mc_uint64(t.token[5], cas_unique)) {
    return answer_classic(out, reply::kBadFormat);
  }
  out.mode = storage_mode(out.command);
  out.flags = flags;
  set_exptime(out, exptime);
  out.cas = cas_unique;
  out.has_cas = out.command == Command::cas;
  // A bad length leaves the data unread: memcached reads it as a command.
  if (value_length < 0 || value_length > std::numeric_limits<int32_t>::max() - 2) {
    return answer_classic(out, reply::kBadFormat);
  }
  const uint64_t data_bytes = static_cast<uint64_t>(value_length) + 2;
  // memcached refuses an item whose header + key + value exceeds its slab
  // limit (-I); the proxy bounds the value alone, so a value a little
  // under the limit may still be refused, by the server, the same way.
  if (static_cast<uint64_t>(value_length) > limits.item_size_max) {
    answer_classic(out, reply::kTooLarge, data_bytes);
    // memcached unlinks the old item of a refused `set` (only set).
    if (out.command == Command::set) {
      out.invalidate_key = true;
      out.keys.push_back(t.token[1]);
      out.raw_key = t.token[1];
    }
    return;
  }
  out.action = Action::forward;
  out.keys.push_back(t.token[1]);
  out.data_bytes = data_bytes;
}

// delete <key> [0] [noreply]: the legacy hold time must be "0".
void parse_delete(const LineTokens& t, Request& out) {
  const size_t ntokens = t.ntokens();
  if (ntokens < 3 || ntokens > 5) return reply::answer(out, reply::kError);
  if (ntokens > 3) {
    const bool hold_is_zero = t.token[2] == "0";
    read_noreply(t, out);
    const bool valid = (ntokens == 4 && (hold_is_zero || out.quiet)) ||
                       (ntokens == 5 && hold_is_zero && out.quiet);
    if (!valid) return answer_classic(out, reply::kDeleteUsage);
  }
  if (t.token[1].size() > kMaxKeyLength) return answer_classic(out, reply::kBadFormat);
  out.action = Action::forward;
  out.keys.push_back(t.token[1]);
}

// incr|decr <key> <delta> [noreply], touch <key> <exptime> [noreply].
void parse_key_and_number(const LineTokens& t, Request& out) {
  if (t.ntokens() != 4 && t.ntokens() != 5) return reply::answer(out, reply::kError);
  read_noreply(t, out);
  if (t.token[1].size() > kMaxKeyLength) return answer_classic(out, reply::kBadFormat);
  if (out.command == Command::touch) {
    int32_t exptime = 0;
    if (!parse_mc_int32(t.token[2], exptime)) return answer_classic(out, reply::kBadExptime);
    set_exptime(out, exptime);
  } else {
    if (!parse_mc_uint64(t.token[2], out.delta)) return answer_classic(out, reply::kBadDelta);
    out.mode = out.command == Command::incr ? Mode::incr : Mode::decr;
  }
  out.action = Action::forward;
  out.keys.push_back(t.token[1]);
}

// flush_all [delay] [noreply]: memcached reads a delay whenever the line
// holds more than the command and an eventual noreply.
void parse_flush_all(const LineTokens& t, Request& out) {
  const size_t ntokens = t.ntokens();
  if (ntokens < 2 || ntokens > 4) return reply::answer(out, reply::kError);
  read_noreply(t, out);
  int32_t delay = 0;
  if (ntokens != (out.quiet ? 3u : 2u)) {
    if (!parse_mc_int32(t.token[1], delay)) return answer_classic(out, reply::kBadExptime);
    set_exptime(out, delay);
  }
  out.action = Action::broadcast;
}

// Commands the proxy answers itself; `args` carries what follows the word.
void parse_local(std::string_view line, Request& out) {
  TokenCursor cursor(line);
  std::string_view token;
  cursor.next(token);  // the command
  while (cursor.next(token)) out.args.push_back(token);
  out.action = Action::local;
}

// verbosity <level> [noreply]
void parse_verbosity(std::string_view line, const LineTokens& t, Request& out) {
  if (t.ntokens() != 3 && t.ntokens() != 4) return reply::answer(out, reply::kError);
  read_noreply(t, out);
  uint32_t level = 0;
  if (!parse_mc_uint32(t.token[1], level)) return answer_classic(out, reply::kBadFormat);
  parse_local(line, out);
}

}  // namespace

void parse_request_line(std::string_view line, const Limits& limits, Request& out) {
  out.clear();
  // memcached handles the line as a C string: a NUL byte ends it.
  line = line.substr(0, line.find('\0'));
  TokenCursor cursor(line);
  std::string_view word;
  // No command word is shorter than two bytes (memcached checks this first).
  if (!cursor.next(word) || word.size() < 2) return reply::answer(out, reply::kError);
  const bool known = find_command(word, out.command);
  if (known && is_multi_key(out.command)) return parse_retrieval(cursor, out);
  const LineTokens t(line);
  if (!known) {
    // An unknown command whose last token starts with "HTTP/" is an HTTP
    // request ("GET / HTTP/1.1", "POST /x HTTP/1.1"): memcached closes
    // without a word (proto_text.c), so that a browser page or a
    // server-side request forgery cannot smuggle commands in its body.
    if (t.token[t.ntokens() - 2].starts_with("HTTP/")) {
      out.action = Action::close;
      out.foreign = true;
      return;
    }
    return reply::answer(out, reply::kError);
  }
  switch (out.command) {
    case Command::get:
    case Command::gets:
    case Command::gat:
    case Command::gats:
      return;  // parsed above
    case Command::set:
    case Command::add:
    case Command::replace:
    case Command::append:
    case Command::prepend:
    case Command::cas:
      return parse_storage(t, limits, out);
    case Command::delete_:
      return parse_delete(t, out);
    case Command::incr:
    case Command::decr:
    case Command::touch:
      return parse_key_and_number(t, out);
    case Command::meta_get:
    case Command::meta_set:
    case Command::meta_delete:
    case Command::meta_arithmetic:
    case Command::meta_debug:
      return parse_meta_request(t, limits, out);
    case Command::flush_all:
      return parse_flush_all(t, out);
    case Command::verbosity:
      return parse_verbosity(line, t, out);
    case Command::meta_noop:
    case Command::version:
    case Command::quit:
    case Command::stats:
      return parse_local(line, out);
  }
}

bool line_too_long(std::string_view partial_line) {
  // memcached looks at a line without newline once it exceeds 2048 bytes:
  // it skips up to 100 leading spaces and keeps reading only a "get " or
  // "gets " line (gat, bget and tabs are not let through).
  if (partial_line.size() <= kMaxLineLength) return false;
  constexpr size_t kMaxLeadingSpaces = 100;
  const size_t spaces = partial_line.find_first_not_of(' ');
  if (spaces == std::string_view::npos || spaces > kMaxLeadingSpaces) return true;
  const std::string_view rest = partial_line.substr(spaces);
  if (!rest.starts_with("get ") && !rest.starts_with("gets ")) return true;
  return partial_line.size() > kMaxRetrievalLineLength;
}

void append_retrieval_line(const Request& request, const std::vector<std::string_view>& keys,
                           std::string& out) {
  switch (request.command) {
    case Command::gets:
      out.append("gets");
      break;
    case Command::gat:
      out.append("gat ").append(request.exptime);
      break;
    case Command::gats:
      out.append("gats ").append(request.exptime);
      break;
    default:
      out.append("get");
      break;
  }
  for (std::string_view key : keys) out.append(" ").append(key);
  out.append("\r\n");
}

}  // namespace memshard::proto
