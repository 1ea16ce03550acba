// The embedded status page (admin/status_page.h): the bytes served are
// the bytes of status_page.html, and the page is self-contained, loading
// nothing from another host (no CDN, font or script from outside: the
// stats port is often on a host without internet access, and the page's
// Content-Security-Policy would refuse it anyway).
#include "proxy/admin/status_page.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace memshard::proxy {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The page without its comments (HTML, and script or style block and
// line comments): what a comment names is never fetched.
std::string without_comments(std::string_view page) {
  std::string out;
  size_t at = 0;
  while (at < page.size()) {
    if (page.substr(at, 4) == "<!--") {
      const size_t end = page.find("-->", at + 4);
      at = end == page.npos ? page.size() : end + 3;
      continue;
    }
    if (page.substr(at, 2) == "/*") {
      const size_t end = page.find("*/", at + 2);
      at = end == page.npos ? page.size() : end + 2;
      continue;
    }
    // A line comment: "//" that starts a line's text, or follows a space
    // or ';' (not the "//" of a URL, which follows ':').
    if (page.substr(at, 2) == "//" && (at == 0 || page[at - 1] == ' ' || page[at - 1] == '\n' ||
                                       page[at - 1] == ';' || page[at - 1] == '\t')) {
      const size_t end = page.find('\n', at);
      at = end == page.npos ? page.size() : end;
      continue;
    }
    out.push_back(page[at++]);
  }
  return out;
}

// The value that follows `at` (just past `name=`), quoted or not.
std::string attribute_value(std::string_view text, size_t at) {
  if (at >= text.size()) return "";
  const char quote = text[at];
  if (quote == '"' || quote == '\'') {
    const size_t end = text.find(quote, at + 1);
    return std::string(text.substr(at + 1, end == text.npos ? text.npos : end - at - 1));
  }
  size_t end = at;
  while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
         text[end] != '>')
    ++end;
  return std::string(text.substr(at, end - at));
}

// Whether a reference leaves this origin: a scheme that is not data: or
// javascript:, or a protocol-relative "//host".
bool leaves_the_origin(std::string_view ref) {
  std::string r = lower(ref);
  while (!r.empty() && std::isspace(static_cast<unsigned char>(r.front()))) r.erase(0, 1);
  if (r.starts_with("//")) return true;
  const size_t colon = r.find(':');
  if (colon == std::string::npos) return false;
  const std::string scheme = r.substr(0, colon);
  if (scheme.find_first_not_of("abcdefghijklmnopqrstuvwxyz+.-") != std::string::npos) return false;
  return scheme != "data" && scheme != "javascript";
}

TEST(StatusPage, TheEmbeddedBytesAreTheFilesBytes) {
  const std::string file = read_file(MEMSHARD_STATUS_PAGE_FILE);
  const std::string_view page = status_page_html();
  ASSERT_FALSE(file.empty());
  EXPECT_EQ(page.size(), file.size());
  EXPECT_TRUE(page == file) << "the page served is not status_page.html as it is now";
}

TEST(StatusPage, IsOneWholeHtmlDocument) {
  const std::string page = lower(status_page_html());
  EXPECT_TRUE(page.starts_with("<!doctype html>")) << page.substr(0, 40);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos) << "scripts are inline";
  EXPECT_EQ(page.find("<iframe"), std::string::npos);
}

TEST(StatusPage, NoAttributeOrStyleLoadsFromAnotherHost) {
  const std::string page = without_comments(status_page_html());
  const std::string low = lower(page);
  std::vector<std::string> outside;
  for (const char* attribute : {"src=", "href=", "action=", "srcset=", "poster=", "data=",
                                "background=", "formaction=", "manifest="}) {
    for (size_t at = low.find(attribute); at != std::string::npos;
         at = low.find(attribute, at + 1)) {
      // Only attributes: the name starts a word.
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(low[at - 1])) || low[at - 1] == '-'))
        continue;
      const std::string value = attribute_value(page, at + std::string_view(attribute).size());
      if (leaves_the_origin(value)) outside.push_back(std::string(attribute) + value);
    }
  }
  for (const char* css : {"url(", "@import"}) {
    for (size_t at = low.find(css); at != std::string::npos; at = low.find(css, at + 1)) {
      size_t v = at + std::string_view(css).size();
      while (v < page.size() && (page[v] == ' ' || page[v] == '"' || page[v] == '\'')) ++v;
      const std::string value = page.substr(v, page.find_first_of(")\"'; \n", v) - v);
      if (leaves_the_origin(value)) outside.push_back(std::string(css) + value);
    }
  }
  for (const std::string& ref : outside) ADD_FAILURE() << "loads from elsewhere: " << ref;
}

TEST(StatusPage, NoAddressOfAnotherHostOutsideComments) {
  // XML namespace names are identifiers that look like addresses: the
  // script creates SVG elements with them, and nothing fetches them.
  const std::set<std::string> namespaces = {
      "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xhtml", "http://www.w3.org/1999/xlink"};
  const std::string page = without_comments(status_page_html());
  const std::string low = lower(page);
  for (const char* scheme : {"http://", "https://", "ws://", "wss://", "ftp://"}) {
    for (size_t at = low.find(scheme); at != std::string::npos; at = low.find(scheme, at + 1)) {
      if (at > 0 && std::isalpha(static_cast<unsigned char>(low[at - 1]))) continue;
      const size_t end = page.find_first_of("\"'` )<>\n", at);
      const std::string address = page.substr(at, end == std::string::npos ? end : end - at);
      EXPECT_TRUE(namespaces.count(address)) << "the page names another host: " << address;
    }
  }
  // What the check relies on: comments are dropped, the rest is read.
  EXPECT_EQ(without_comments("a // http://x.example/\nb").find("x.example"), std::string::npos);
  EXPECT_NE(without_comments("f(\"http://x.example/\")").find("x.example"), std::string::npos);
}

}  // namespace
}  // namespace memshard::proxy
