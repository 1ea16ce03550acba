// docs/configuration.md against the parser: every key the parser takes
// (conf/keys.h, from the tables it checks keys against) has a section of
// its own there, with its default and an example, and every example loads.
// A key added to the parser without its section fails here, and so does a
// section left behind by a key taken out.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "conf/config.h"
#include "conf/keys.h"

namespace memshard::conf {
namespace {

constexpr const char* kPage = MEMSHARD_SOURCE_DIR "/docs/configuration.md";

std::string read_page() {
  std::ifstream in(kPage);
  EXPECT_TRUE(in) << "cannot read " << kPage;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One heading of the page and what follows it up to the next heading.
struct Section {
  int level = 0;      // 2 for "## ", 3 for "### ", ...
  std::string title;  // after the #s
  std::string key;    // "listen" for "### `listen`"; empty for any other title
  int line = 0;       // 1-based, of the heading
  std::string body;   // up to the next heading
};

// Headings outside fenced blocks (a YAML comment starts with # too).
std::vector<Section> sections(const std::string& page) {
  std::vector<Section> out;
  std::istringstream in(page);
  std::string line;
  bool fenced = false;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.starts_with("```")) fenced = !fenced;
    if (!fenced && line.starts_with("#")) {
      Section s;
      s.line = n;
      while (s.level < static_cast<int>(line.size()) && line[s.level] == '#') ++s.level;
      s.title = line.substr(std::min(line.size(), static_cast<size_t>(s.level) + 1));
      if (s.title.size() > 2 && s.title.front() == '`' && s.title.back() == '`' &&
          s.title.find('`', 1) == s.title.size() - 1) {
        s.key = s.title.substr(1, s.title.size() - 2);
      }
      out.push_back(std::move(s));
      continue;
    }
    if (!out.empty()) out.back().body += line + "\n";
  }
  return out;
}

// The fenced blocks of `text` whose fence names `lang`, with the line
// each starts on.
std::vector<std::pair<int, std::string>> blocks(const std::string& text, std::string_view lang) {
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in(text);
  std::string line;
  bool fenced = false, wanted = false;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.starts_with("```")) {
      if (!fenced) {
        wanted = std::string_view(line).substr(3) == lang;
        if (wanted) out.emplace_back(n + 1, "");
      }
      fenced = !fenced;
      continue;
    }
    if (fenced && wanted) out.back().second += line + "\n";
  }
  return out;
}

struct Keys {
  std::set<std::string> top_and_pool;  // a "### `key`" section each
  std::set<std::string> route;         // a "#### `key`" section each, under routes
};

Keys keys() {
  Keys k;
  for (std::string_view n : key_names().top_level) k.top_and_pool.emplace(n);
  for (std::string_view n : key_names().pool) k.top_and_pool.emplace(n);
  for (std::string_view n : key_names().route) k.route.emplace(n);
  return k;
}

TEST(ConfigKeys, TheListIsTheParsers) {
  // Not empty, no name twice: a table read wrong would pass the rest.
  const KeyNames& n = key_names();
  EXPECT_GE(n.pool.size(), 40u);
  EXPECT_EQ(n.top_level.size(), 2u);
  EXPECT_EQ(n.route.size(), 8u);
  const Keys k = keys();
  EXPECT_EQ(k.top_and_pool.size(), n.top_level.size() + n.pool.size());
  EXPECT_EQ(k.route.size(), n.route.size());
  for (const std::string& r : k.route) EXPECT_FALSE(k.top_and_pool.contains(r)) << r;
}

// Each name of the list is one the parser takes where the list says.
TEST(ConfigKeys, TheParserTakesEveryKeyListed) {
  const std::string pool =
      "alpha:\n  listen: 127.0.0.1:22121\n  servers:\n    - 127.0.0.1:11211:1\n";
  for (std::string_view key : key_names().top_level) {
    const LoadResult r = parse_config(std::string(key) + ": x\n" + pool, "t.yml");
    for (const ConfigError& e : r.errors) ADD_FAILURE() << key << ": " << e.to_string();
  }
  for (std::string_view key : key_names().pool) {
    const LoadResult r = parse_config("alpha:\n  " + std::string(key) + ": x\n", "t.yml");
    for (const ConfigError& e : r.errors) {
      EXPECT_EQ(e.message.find("unknown directive"), std::string::npos) << e.to_string();
    }
  }
  for (std::string_view key : key_names().route) {
    const LoadResult r = parse_config(
        "front:\n  listen: 127.0.0.1:22121\n  routes:\n    - " + std::string(key) + ": x\n",
        "t.yml");
    for (const ConfigError& e : r.errors) {
      EXPECT_EQ(e.message.find("unknown route field"), std::string::npos) << e.to_string();
    }
  }
  // And refuses one it does not list, in a pool and in a route.
  const std::string routed = "front:\n  listen: 127.0.0.1:22121\n  routes:\n    - pool: alpha\n";
  const std::string target = "alpha:\n  servers:\n    - 127.0.0.1:11211:1\n";
  ASSERT_TRUE(parse_config(routed + target, "t.yml").config);
  const LoadResult field = parse_config(routed + "      no_such_field: 1\n" + target, "t.yml");
  ASSERT_FALSE(field.errors.empty());
  EXPECT_NE(field.errors[0].message.find("unknown route field"), std::string::npos)
      << field.errors[0].to_string();
  const LoadResult directive = parse_config(pool + "  no_such_key: 1\n", "t.yml");
  ASSERT_FALSE(directive.errors.empty());
  EXPECT_NE(directive.errors[0].message.find("unknown directive"), std::string::npos)
      << directive.errors[0].to_string();
}

TEST(ConfigKeys, EveryKeyHasASectionOfItsOwn) {
  const Keys k = keys();
  const std::vector<Section> all = sections(read_page());
  std::map<std::string, int> seen;
  const Section* routes = nullptr;  // the last "### `routes`" seen
  for (const Section& s : all) {
    if (s.level <= 3) routes = (s.level == 3 && s.key == "routes") ? &s : nullptr;
    if (s.key.empty() || s.level < 3) continue;
    if (const auto [it, is_new] = seen.emplace(s.key, s.line); !is_new) {
      ADD_FAILURE() << kPage << ":" << s.line << ": `" << s.key
                    << "` has a section already, on line " << it->second;
    }
    if (s.level == 3) {
      EXPECT_TRUE(k.top_and_pool.contains(s.key))
          << kPage << ":" << s.line << ": ### `" << s.key
          << "` is not a key the parser takes (conf/keys.h): a section left behind?";
    } else if (s.level == 4) {
      EXPECT_TRUE(k.route.contains(s.key) && routes != nullptr)
          << kPage << ":" << s.line << ": #### `" << s.key
          << "` is not a field of a route, under ### `routes` (conf/keys.h)";
    }
  }
  for (const std::string& key : k.top_and_pool) {
    EXPECT_TRUE(seen.contains(key)) << kPage << " has no section \"### `" << key
                                    << "`\": the parser takes that key (conf/keys.h)";
  }
  for (const std::string& key : k.route) {
    EXPECT_TRUE(seen.contains(key)) << kPage << " has no section \"#### `" << key
                                    << "`\" under ### `routes`: a route takes that field";
  }
}

TEST(ConfigKeys, EverySectionSaysTheDefaultAndShowsAnExample) {
  const Keys k = keys();
  for (const Section& s : sections(read_page())) {
    if (!k.top_and_pool.contains(s.key) && !k.route.contains(s.key)) continue;
    EXPECT_NE(s.body.find("\n- Default: "), std::string::npos)
        << kPage << ":" << s.line << ": `" << s.key << "` says no \"- Default: \"";
    EXPECT_NE(s.body.find("\n- Values: "), std::string::npos)
        << kPage << ":" << s.line << ": `" << s.key << "` says no \"- Values: \"";
    EXPECT_NE(s.body.find("\n```"), std::string::npos)
        << kPage << ":" << s.line << ": `" << s.key << "` has no example";
    // The example shows the key itself, as it would be written.
    bool shown = false;
    for (const auto& [line, yaml] : blocks(s.body, "yaml")) {
      shown = shown || yaml.find(s.key + ":") != std::string::npos;
    }
    for (const auto& [line, text] : blocks(s.body, "text")) {
      shown = shown || text.find(s.key) != std::string::npos;
    }
    EXPECT_TRUE(shown) << kPage << ":" << s.line << ": no example of `" << s.key << "` writes it";
  }
}

TEST(ConfigKeys, TheIndexLinksEveryKey) {
  const std::string page = read_page();
  const Keys k = keys();
  for (const std::set<std::string>* set : {&k.top_and_pool, &k.route}) {
    for (const std::string& key : *set) {
      EXPECT_NE(page.find("(#" + key + ")"), std::string::npos)
          << kPage << ": no link to `" << key << "` ((#" << key << "))";
    }
  }
}

// What the page shows can be copied: each example loads as it is.
TEST(ConfigKeys, EveryExampleLoads) {
  const auto examples = blocks(read_page(), "yaml");
  EXPECT_GE(examples.size(), keys().top_and_pool.size());
  for (const auto& [line, yaml] : examples) {
    const LoadResult r = parse_config(yaml, std::string(kPage) + ":" + std::to_string(line));
    for (const ConfigError& e : r.errors) ADD_FAILURE() << e.to_string();
  }
}

}  // namespace
}  // namespace memshard::conf
