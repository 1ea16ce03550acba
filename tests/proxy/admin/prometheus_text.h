// A reader of the Prometheus text exposition format (0.0.4) that checks
// the rules a scraper relies on: each family has one HELP and one TYPE,
// written before its samples; a family's samples form one group; names
// and labels are well formed; label values use only the \\, \" and \n
// escapes; values are numbers; no series appears twice. What it reads is
// handed back unescaped, so a test finds a sample by its labels' real
// values.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memshard::proxy::testing {

struct PromSample {
  std::string name;  // as written: a histogram's name_bucket, name_sum, name_count
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string name, type, help;
  std::vector<PromSample> samples;
};

struct PromText {
  std::vector<PromFamily> families;  // in the order written
  std::vector<std::string> errors;   // every rule broken, with its line

  const PromFamily* family(std::string_view name) const {
    for (const PromFamily& f : families) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
  // The samples named `name` whose labels include every one of `want`.
  std::vector<PromSample> find(std::string_view name,
                               const std::map<std::string, std::string>& want = {}) const {
    std::vector<PromSample> out;
    for (const PromFamily& f : families) {
      for (const PromSample& s : f.samples) {
        if (s.name != name) continue;
        bool all = true;
        for (const auto& [k, v] : want) {
          auto it = s.labels.find(k);
          all = all && it != s.labels.end() && it->second == v;
        }
        if (all) out.push_back(s);
      }
    }
    return out;
  }
};

namespace prom_detail {

inline bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
inline bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}
inline bool valid_name(std::string_view n, bool label) {
  if (n.empty() || !name_start(n[0]) || (label && n[0] == ':')) return false;
  for (char c : n) {
    if (!name_char(c) || (label && c == ':')) return false;
  }
  return true;
}

// The family a sample belongs to: a histogram's _bucket, _sum and _count
// samples belong to the family without the suffix.
inline std::string family_of(const std::string& sample,
                             const std::map<std::string, std::string>& types) {
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (sample.size() > suffix.size() && sample.ends_with(suffix)) {
      std::string base = sample.substr(0, sample.size() - suffix.size());
      auto it = types.find(base);
      if (it != types.end() && (it->second == "histogram" || it->second == "summary")) return base;
    }
  }
  return sample;
}

inline bool parse_value(std::string_view text, double& out) {
  if (text == "+Inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-Inf") {
    out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (text.empty()) return false;
  std::string s(text);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && s.find_first_of("xXpP") == std::string::npos;
}

}  // namespace prom_detail

inline PromText read_prometheus_text(std::string_view text) {
  using namespace prom_detail;
  PromText out;
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> helped, closed;      // families with HELP; families whose group ended
  std::set<std::pair<std::string, std::map<std::string, std::string>>> series;
  std::string current;  // the family of the last line
  size_t line_no = 0;
  auto error = [&](const std::string& why) {
    out.errors.push_back("line " + std::to_string(line_no) + ": " + why);
  };
  auto family_entry = [&](const std::string& name) -> PromFamily& {
    for (PromFamily& f : out.families) {
      if (f.name == name) return f;
    }
    out.families.push_back(PromFamily{name, "", "", {}});
    return out.families.back();
  };
  auto enter = [&](const std::string& family) {
    if (family == current) return;
    if (!current.empty()) closed.insert(current);
    if (closed.count(family) != 0) error("family " + family + " written in two groups");
    current = family;
  };
  if (!text.empty() && !text.ends_with('\n')) {
    line_no = 0;
    error("the text does not end with a newline");
  }
  while (!text.empty()) {
    ++line_no;
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == text.npos ? text.size() : eol + 1);
    if (line.empty()) {
      error("empty line");
      continue;
    }
    if (line.starts_with('#')) {
      const bool help = line.starts_with("# HELP ");
      const bool type = line.starts_with("# TYPE ");
      if (!help && !type) continue;  // a plain comment
      std::string_view rest = line.substr(7);
      const size_t sp = rest.find(' ');
      const std::string name(rest.substr(0, sp));
      const std::string_view arg = sp == rest.npos ? std::string_view() : rest.substr(sp + 1);
      if (!valid_name(name, false)) error("bad metric name '" + name + "'");
      enter(name);
      PromFamily& f = family_entry(name);
      if (help) {
        if (!helped.insert(name).second) error("second HELP for " + name);
        if (arg.empty()) error("empty HELP for " + name);
        f.help.assign(arg);
      } else {
        if (types.count(name) != 0) error("second TYPE for " + name);
        if (!f.samples.empty()) error("TYPE after samples of " + name);
        static const std::set<std::string_view> kTypes = {"counter", "gauge", "histogram",
                                                          "summary", "untyped"};
        if (kTypes.count(arg) == 0) error("unknown type '" + std::string(arg) + "'");
        types[name] = std::string(arg);
        f.type.assign(arg);
      }
      continue;
    }
    // name{label="value",...} value
    PromSample s;
    size_t at = 0;
    while (at < line.size() && name_char(line[at])) ++at;
    s.name.assign(line.substr(0, at));
    if (!valid_name(s.name, false)) error("bad sample name in '" + std::string(line) + "'");
    if (at < line.size() && line[at] == '{') {
      ++at;
      while (at < line.size() && line[at] != '}') {
        const size_t name_start_at = at;
        while (at < line.size() && name_char(line[at])) ++at;
        const std::string label(line.substr(name_start_at, at - name_start_at));
        if (!valid_name(label, true)) error("bad label name '" + label + "'");
        if (at + 1 >= line.size() || line[at] != '=' || line[at + 1] != '"') {
          error("label without =\"value\" in '" + std::string(line) + "'");
          break;
        }
        at += 2;
        std::string value;
        bool closed_quote = false;
        while (at < line.size()) {
          const char c = line[at++];
          if (c == '"') {
            closed_quote = true;
            break;
          }
          if (c != '\\') {
            value.push_back(c);
            continue;
          }
          const char e = at < line.size() ? line[at++] : '\0';
          if (e == '\\' || e == '"') {
            value.push_back(e);
          } else if (e == 'n') {
            value.push_back('\n');
          } else {
            error("bad escape in a label value of '" + std::string(line) + "'");
          }
        }
        if (!closed_quote) error("label value not closed in '" + std::string(line) + "'");
        if (!s.labels.emplace(label, value).second) error("label " + label + " twice");
        if (at < line.size() && line[at] == ',') ++at;
      }
      if (at >= line.size()) {
        error("labels not closed in '" + std::string(line) + "'");
        continue;
      }
      ++at;  // }
    }
    if (at >= line.size() || line[at] != ' ') {
      error("no value in '" + std::string(line) + "'");
      continue;
    }
    std::string_view value_text = line.substr(at + 1);
    if (const size_t sp = value_text.find(' '); sp != value_text.npos) {
      value_text = value_text.substr(0, sp);  // a timestamp may follow
    }
    if (!parse_value(value_text, s.value)) error("bad value in '" + std::string(line) + "'");
    const std::string family = family_of(s.name, types);
    if (types.count(family) == 0) error("sample of " + family + " before its TYPE");
    if (helped.count(family) == 0) error("sample of " + family + " without HELP");
    enter(family);
    if (!series.emplace(s.name, s.labels).second) {
      error("series written twice: '" + std::string(line) + "'");
    }
    family_entry(family).samples.push_back(std::move(s));
  }
  return out;
}

}  // namespace memshard::proxy::testing
