// The hot keys in each format the stats come in (admin/hot_keys_render.h):
// which keys are shown, how a key is escaped so that no format breaks, and
// that `stats hotkeys`, the JSON field and the Prometheus gauges all say
// the same about the same keys.
#include "proxy/admin/hot_keys_render.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "prometheus_text.h"
#include "strict_json.h"

namespace memshard::proxy {
namespace {

using testing::Json;
using testing::StrictJsonReader;

// A key that every format must escape: a space, a control byte, the
// escape character itself, a quote and a backslash.
const std::string kAwkwardKey = std::string("a b\x01%\"\\") + "\xff";

// Undoes %XX escapes; false on a malformed one.
bool unescape(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const std::string hex(in.substr(i + 1, 2));
    if (!std::isxdigit(static_cast<unsigned char>(hex[0])) ||
        !std::isxdigit(static_cast<unsigned char>(hex[1])))
      return false;
    out.push_back(static_cast<char>(std::strtoul(hex.c_str(), nullptr, 16)));
    i += 2;
  }
  return true;
}

// One worker's summary of `total` requests: twelve keys counted 1300, 1200,
// ..., 200 times (all hot at a 1% threshold), the awkward key among them,
// and one cold key.
HotKeySummary busy_summary(uint64_t total) {
  HotKeySummary s;
  s.total = total;
  for (int i = 0; i < 12; ++i) {
    const std::string key = i == 3 ? kAwkwardKey : "key:" + std::to_string(i);
    s.counters.push_back(
        {key, "server-" + std::to_string(i % 3), static_cast<uint64_t>(1300 - 100 * i), 0});
  }
  s.counters.push_back({"cold", "server-0", 5, 0});
  return s;
}

StatsSnapshot two_pools() {
  StatsSnapshot snap;
  auto& alpha = snap.pools["alpha"];
  alpha.hot_keys.push_back(busy_summary(10'000));
  alpha.hot_key_share = 0.01;
  snap.pools["beta"].hot_key_share = 0.01;  // no traffic: no hot key
  return snap;
}

double parse_double(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  EXPECT_EQ(end, text.c_str() + text.size()) << "not a number: " << text;
  return v;
}

TEST(HotKeysEscape, EveryByteRoundTripsAndTheResultIsOneSafeToken) {
  for (int b = 0; b < 256; ++b) {
    const std::string key = std::string("k") + static_cast<char>(b) + "k";
    const std::string shown = escaped_hot_key(key);
    for (unsigned char c : shown) {
      // A token of a STAT line, a JSON string and a label value alike.
      EXPECT_TRUE(std::isgraph(c) && c != '"' && c != '\\') << "byte " << b << ": " << shown;
    }
    std::string back;
    ASSERT_TRUE(unescape(shown, back)) << shown;
    EXPECT_EQ(back, key) << "byte " << b;
    const bool kept = b > 0x20 && b < 0x7f && b != '%' && b != '"' && b != '\\';
    EXPECT_EQ(shown == key, kept) << "byte " << b << " shown as " << shown;
  }
}

TEST(HotKeysEscape, EscapesAreUppercaseHexOfTheByte) {
  for (int b : {0x00, 0x20, 0x22, 0x25, 0x5c, 0x7f, 0xab, 0xff}) {
    char want[4];
    snprintf(want, sizeof(want), "%%%02X", b);
    EXPECT_EQ(escaped_hot_key(std::string(1, static_cast<char>(b))), want);
  }
  EXPECT_EQ(escaped_hot_key("user:42"), "user:42");
}

TEST(HotKeysShown, TheHottestFirstAtMostTheLimitAndNeverACold) {
  const StatsSnapshot snap = two_pools();
  const std::vector<HotKeyReport> shown = shown_hot_keys(snap.pools.at("alpha"));
  ASSERT_EQ(shown.size(), kHotKeysShown) << "twelve hot keys, a bounded few shown";
  for (size_t i = 0; i + 1 < shown.size(); ++i) {
    EXPECT_GE(shown[i].share, shown[i + 1].share) << "hottest first";
  }
  // Counts fall with the key's index: the shown ones are indices 0..9.
  for (size_t i = 0; i < shown.size(); ++i) {
    const std::string want = i == 3 ? kAwkwardKey : "key:" + std::to_string(i);
    EXPECT_EQ(shown[i].key, want);
    EXPECT_EQ(shown[i].server, "server-" + std::to_string(i % 3));
    EXPECT_NEAR(shown[i].share, (1300.0 - 100.0 * static_cast<double>(i)) / 10'000.0, 1e-9);
  }
  EXPECT_TRUE(shown_hot_keys(snap.pools.at("beta")).empty());
}

TEST(HotKeysStat, FourLinesPerKeyAndRankThenEnd) {
  const StatsSnapshot snap = two_pools();
  std::string out;
  render_stat_hot_keys(snap, out);
  ASSERT_TRUE(out.ends_with("END\r\n"));
  const std::vector<HotKeyReport> shown = shown_hot_keys(snap.pools.at("alpha"));
  std::istringstream lines(out);
  std::string line;
  for (size_t rank = 0; rank < shown.size(); ++rank) {
    const std::string prefix = "STAT alpha:hot_key:" + std::to_string(rank) + ":";
    const HotKeyReport& r = shown[rank];
    for (const char* field : {"key", "share", "error", "server"}) {
      ASSERT_TRUE(std::getline(lines, line));
      ASSERT_TRUE(line.ends_with('\r')) << line;
      line.pop_back();
      const std::string head = prefix + field + " ";
      ASSERT_TRUE(line.starts_with(head)) << line;
      const std::string value = line.substr(head.size());
      EXPECT_EQ(value.find(' '), std::string::npos) << "one token: " << line;
      const std::string_view f = field;
      if (f == "key") {
        EXPECT_EQ(value, escaped_hot_key(r.key));
      } else if (f == "share") {
        EXPECT_NEAR(parse_double(value), r.share, 1e-6);
      } else if (f == "error") {
        EXPECT_NEAR(parse_double(value), r.error, 1e-6);
      } else {
        EXPECT_EQ(value, r.server);
      }
    }
  }
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, "END\r") << "nothing for the pool without hot keys";
  EXPECT_FALSE(std::getline(lines, line));
}

TEST(HotKeysStat, NoHotKeyAnywhereIsEndAlone) {
  StatsSnapshot snap;
  snap.pools["alpha"];
  std::string out;
  render_stat_hot_keys(snap, out);
  EXPECT_EQ(out, "END\r\n");
}

// The JSON field is appended to an object: read it inside one.
Json hotkeys_json(const StatsSnapshot& snap) {
  std::string out = "{\"before\":0";
  append_hot_keys_json(snap, out);
  out.append("}");
  std::string error;
  std::optional<Json> doc = StrictJsonReader::parse(out, error);
  EXPECT_TRUE(doc) << error << "\n" << out;
  if (!doc) return Json();
  EXPECT_EQ(doc->count("hotkeys"), 1u);
  const Json* list = doc->find("hotkeys");
  EXPECT_NE(list, nullptr);
  return list != nullptr ? *list : Json();
}

TEST(HotKeysJson, AListOfOneObjectPerShownKey) {
  const StatsSnapshot snap = two_pools();
  const Json list = hotkeys_json(snap);
  ASSERT_EQ(list.kind, Json::Kind::array) << "a list, which twemproxy tools skip";
  const std::vector<HotKeyReport> shown = shown_hot_keys(snap.pools.at("alpha"));
  ASSERT_EQ(list.items.size(), shown.size());
  for (size_t i = 0; i < shown.size(); ++i) {
    const Json& item = list.items[i];
    ASSERT_EQ(item.kind, Json::Kind::object);
    ASSERT_NE(item.find("pool"), nullptr);
    EXPECT_EQ(item.find("pool")->text, "alpha");
    ASSERT_NE(item.find("key"), nullptr);
    EXPECT_EQ(item.find("key")->text, escaped_hot_key(shown[i].key));
    ASSERT_NE(item.find("share"), nullptr);
    EXPECT_NEAR(item.find("share")->as_double(), shown[i].share, 1e-6);
    ASSERT_NE(item.find("error"), nullptr);
    EXPECT_NEAR(item.find("error")->as_double(), shown[i].error, 1e-6);
    ASSERT_NE(item.find("server"), nullptr);
    EXPECT_EQ(item.find("server")->text, shown[i].server);
  }
}

TEST(HotKeysJson, NoHotKeyIsAnEmptyList) {
  StatsSnapshot snap;
  snap.pools["alpha"];
  const Json list = hotkeys_json(snap);
  EXPECT_EQ(list.kind, Json::Kind::array);
  EXPECT_TRUE(list.items.empty());
}

TEST(HotKeysPrometheus, TwoGaugesWithOneSampleEachPerShownKey) {
  const StatsSnapshot snap = two_pools();
  std::string out;
  append_hot_keys_prometheus(snap, out);
  const testing::PromText text = testing::read_prometheus_text(out);
  for (const std::string& e : text.errors) ADD_FAILURE() << e;
  const std::vector<HotKeyReport> shown = shown_hot_keys(snap.pools.at("alpha"));
  for (const char* name : {"memshard_hot_key_share", "memshard_hot_key_share_error"}) {
    const testing::PromFamily* f = text.family(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type, "gauge");
    EXPECT_EQ(f->samples.size(), shown.size());
  }
  for (const HotKeyReport& r : shown) {
    const std::map<std::string, std::string> labels = {
        {"pool", "alpha"}, {"key", escaped_hot_key(r.key)}, {"server", r.server}};
    const auto share = text.find("memshard_hot_key_share", labels);
    ASSERT_EQ(share.size(), 1u) << r.key;
    EXPECT_NEAR(share[0].value, r.share, 1e-6);
    const auto error = text.find("memshard_hot_key_share_error", labels);
    ASSERT_EQ(error.size(), 1u) << r.key;
    EXPECT_NEAR(error[0].value, r.error, 1e-6);
  }
}

TEST(HotKeysPrometheus, NoHotKeyStillDeclaresBothFamilies) {
  StatsSnapshot snap;
  snap.pools["alpha"];
  std::string out;
  append_hot_keys_prometheus(snap, out);
  const testing::PromText text = testing::read_prometheus_text(out);
  for (const std::string& e : text.errors) ADD_FAILURE() << e;
  ASSERT_NE(text.family("memshard_hot_key_share"), nullptr);
  ASSERT_NE(text.family("memshard_hot_key_share_error"), nullptr);
  EXPECT_TRUE(text.family("memshard_hot_key_share")->samples.empty());
}

}  // namespace
}  // namespace memshard::proxy
