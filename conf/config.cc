// Loading nutcracker.yml: the document and top level here, one pool's
// directives in pool.cc, scalar values in values.cc.
#include "conf/config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include "conf/mcrouter.h"
#include "conf/pool.h"

namespace memshard::conf {
namespace {

using detail::describe;
using detail::ErrorList;
using detail::line_of;
using detail::ParsedPool;

// What a listener binds: two pools cannot share it. Compared by meaning
// rather than by the text nutcracker compares, so "/s.sock 0600" and
// "/s.sock 0666" are caught too.
std::string bind_key(const ListenAddress& l) {
  if (l.is_unix) return l.path;
  std::string host = l.host;
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host + ":" + std::to_string(l.port);
}

void check_listen_conflicts(const std::vector<ParsedPool>& pools, ErrorList& errors) {
  std::map<std::string, const ParsedPool*> bound;
  for (const ParsedPool& p : pools) {
    if (!p.has_listen) continue;
    const auto [it, is_new] = bound.emplace(bind_key(p.pool.listen), &p);
    if (is_new) continue;
    const ParsedPool& first = *it->second;
    errors.add(p.listen_line, "listen",
               "pool '" + p.pool.name + "' listens on " + p.pool.listen.text + ", as pool '" +
                   first.pool.name + "' on line " + std::to_string(first.listen_line) +
                   " does; expected each pool on its own address");
  }
}

constexpr std::string_view kStatsToken = "stats_token";
constexpr std::string_view kStatsTokenFile = "stats_token_file";
constexpr size_t kMaxStatsToken = 4096;  // as the proxy's token files (admin/stats_token.h)

// A top-level stats_token or stats_token_file (model.h, StatsTokenConfig).
void parse_stats_token(const std::string& key, int line, const YAML::Node& value,
                       StatsTokenConfig& out, ErrorList& errors) {
  const bool is_file = key == kStatsTokenFile;
  if (!value.IsScalar()) {
    errors.add(line, key,
               std::string("expected ") +
                   (is_file ? "the name of a file holding the stats token" : "the stats token") +
                   " as the key's value, found " + describe(value) +
                   (value.IsMap() ? " (" + key +
                                        " is the top-level key of the stats token; a pool cannot "
                                        "be named so)"
                                  : ""));
    return;
  }
  if (out.given()) {
    errors.add(line, key,
               std::string(out.key()) + " is already given on line " + std::to_string(out.line) +
                   "; expected at most one of stats_token and stats_token_file");
    return;
  }
  const std::string& text = value.Scalar();
  if (is_file) {
    if (text.empty()) return errors.add(line, key, "expected a file name, found nothing");
    out.file = text;
    out.line = line;
    return;
  }
  if (text.empty() || text.size() > kMaxStatsToken) {
    return errors.add(
        line, key,
        "expected a token of 1 to 4096 bytes, found " + std::to_string(text.size()) + " bytes");
  }
  for (char c : text) {
    // Never quoted back: the error would put the secret in a log.
    if (c <= 0x20 || c >= 0x7f) {
      return errors.add(line, key,
                        "expected visible ASCII only (no space: the token is sent in an HTTP "
                        "header)");
    }
  }
  out.token = text;
  out.line = line;
}

// The pools, and the top-level keys beside them (stats_token and
// stats_token_file, into `token`).
std::vector<ParsedPool> parse_pools(const YAML::Node& root, StatsTokenConfig& token,
                                    ErrorList& errors) {
  std::vector<ParsedPool> pools;
  std::map<std::string, int> seen;  // pool name -> line first defined
  bool pool_keys = false;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const int line = line_of(it->first);
    if (!it->first.IsScalar() || it->first.Scalar().empty()) {
      errors.add(line, "", "expected a pool name, found " + describe(it->first));
      continue;
    }
    const std::string& name = it->first.Scalar();
    if (name == kStatsToken || name == kStatsTokenFile) {
      parse_stats_token(name, line, it->second, token, errors);
      continue;
    }
    pool_keys = true;
    if (const auto [first, is_new] = seen.emplace(name, line); !is_new) {
      errors.add(line, name,
                 "pool '" + name + "' is already defined on line " + std::to_string(first->second) +
                     "; expected unique pool names");
      continue;
    }
    if (!it->second.IsMap()) {
      errors.add(line, name,
                 "expected the pool's directives (listen:, servers:, ...) as a map indented "
                 "under its name, found " +
                     describe(it->second));
      continue;
    }
    pools.push_back(detail::parse_pool(name, line, it->second, errors));
  }
  if (!pool_keys)
    errors.add(line_of(root), "", "no pools; expected a map of pool names to their directives");
  return pools;
}

// Records where each YAML document starts, and nothing else.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;

  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

int line_of(const YAML::Mark& mark) {
  return mark.line >= 0 ? mark.line + 1 : 0;
}

// The file's only document, or nullopt after reporting why there is none.
//
// Not YAML::LoadAll: in yaml-cpp 0.7 it never returns on some malformed
// input (a stray ',' at the top level), where the parser reports an empty
// document again and again without moving on, until memory runs out. So at
// most two documents are looked at, and a document starting exactly where
// the previous one did is that stuck state.
std::optional<YAML::Node> load_single_document(const std::string& text, ErrorList& errors) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts starts;
    while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
    }
    const std::vector<YAML::Mark>& m = starts.marks;
    if (m.empty()) {
      errors.add(0, "", "no pools; expected a map of pool names to their directives");
      return std::nullopt;
    }
    if (m.size() == 2 && m[1].pos == m[0].pos) {
      const size_t pos = static_cast<size_t>(std::max(m[0].pos, 0));
      const std::string what = pos < text.size() ? "'" + text.substr(pos, 1) + "'" : "text";
      errors.add(line_of(m[0]), "", "malformed YAML: unexpected " + what);
      return std::nullopt;
    }
    if (m.size() > 1) {
      errors.add(line_of(m[1]), "",
                 "expected one YAML document, found more (nutcracker reads exactly one)");
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    errors.add(line_of(e.mark), "", "malformed YAML: " + e.msg);
    return std::nullopt;
  }
}

void parse_documents(const std::string& text, Config& config, ErrorList& errors) {
  const std::optional<YAML::Node> doc = load_single_document(text, errors);
  if (!doc) return;
  const YAML::Node& root = *doc;
  if (!root.IsMap()) {
    errors.add(line_of(root), "",
               "expected a map of pool names to their directives at the top level, found " +
                   describe(root));
    return;
  }
  if (root.size() == 0) {
    errors.add(line_of(root), "", "no pools; expected a map of pool names to their directives");
    return;
  }
  std::vector<ParsedPool> pools = parse_pools(root, config.stats_token, errors);
  check_listen_conflicts(pools, errors);
  detail::check_routes(pools, errors);
  for (ParsedPool& p : pools) config.pools.push_back(std::move(p.pool));
}

}  // namespace

LoadResult parse_config(const std::string& text, const std::string& file) {
  ErrorList errors(file);
  Config config;
  config.file = file;
  parse_documents(text, config, errors);

  LoadResult result;
  result.errors = std::move(errors.all());
  // In file order, whichever check found them; file-wide ones (line 0) first.
  std::stable_sort(result.errors.begin(), result.errors.end(),
                   [](const ConfigError& a, const ConfigError& b) { return a.line < b.line; });
  if (result.errors.empty()) result.config = std::move(config);
  return result;
}

LoadResult load_mcrouter(std::string_view text, const std::string& file,
                         const LoadOptions& options) {
  LoadResult result;
  McrouterConversion c = convert_mcrouter(text, file, McrouterOptions{options.listen});
  if (!c.errors.empty()) {
    result.errors = std::move(c.errors);
    return result;
  }
  LoadResult loaded = parse_config(c.yaml, file);
  for (ConfigError& e : loaded.errors) {
    // What memshard's own checks refuse in the mapping is said where the
    // JSON has it.
    if (e.line > 0 && static_cast<size_t>(e.line) <= c.origins.size()) {
      const auto& [path, line] = c.origins[static_cast<size_t>(e.line) - 1];
      e.message = (e.directive.empty() ? "" : "(memshard's " + e.directive + ") ") + e.message;
      e.directive = path;
      e.line = line;
    }
  }
  return loaded;
}

LoadResult load_config_file(const std::string& path, const LoadOptions& options) {
  auto unreadable = [&](const std::string& why) {
    LoadResult result;
    result.errors.push_back(ConfigError{path, 0, "", "cannot read the file: " + why});
    return result;
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return unreadable("it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return unreadable(std::strerror(errno));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return unreadable(std::strerror(errno));
  if (is_mcrouter_config(text, path)) return load_mcrouter(text, path, options);
  if (!options.listen.empty()) {
    LoadResult result;
    result.errors.push_back(ConfigError{
        path, 0, "",
        "a listen address from the command line (--listen) is for mcrouter's JSON config, "
        "which has none; this file is memshard's, whose pools say where they listen"});
    return result;
  }
  return parse_config(text, path);
}

}  // namespace memshard::conf
