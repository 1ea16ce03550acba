// find_line (proxy/transport/lines.h): where the line at the front of an
// input ends, with the line in one chain or cut across several.
#include "proxy/transport/lines.h"

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memshard::proxy {
namespace {

// An evbuffer holding `pieces`, each in a chain of its own (as reads that
// cut a line leave it).
class Input {
 public:
  explicit Input(const std::vector<std::string>& pieces) : pieces_(pieces) {
    for (const std::string& p : pieces_) {
      evbuffer* chunk = evbuffer_new();
      evbuffer_add(chunk, p.data(), p.size());
      evbuffer_add_buffer(buf_, chunk);
      evbuffer_free(chunk);
    }
  }
  ~Input() { evbuffer_free(buf_); }
  evbuffer* get() const { return buf_; }

 private:
  std::vector<std::string> pieces_;
  evbuffer* buf_ = evbuffer_new();
};

TEST(FindLine, RequestLinesEndAtLfWithTheirCrForTheCaller) {
  Input in({"get a\r\nget b\r\n"});
  Line l = find_line(in.get(), LineEnd::lf);
  EXPECT_EQ(l.length, 6u);  // "get a\r"
  EXPECT_EQ(l.terminator, 1u);
  Input bare({"get a\nrest"});
  EXPECT_EQ(find_line(bare.get(), LineEnd::lf).length, 5u);
}

TEST(FindLine, ReplyLinesEndOnlyAtCrLf) {
  Input in({"STORED\r\nEND\r\n"});
  Line l = find_line(in.get(), LineEnd::crlf);
  EXPECT_EQ(l.length, 6u);
  EXPECT_EQ(l.terminator, 2u);
  EXPECT_EQ(l.total(), 8u);
  // A bare "\n" is not an end for a server's reply: the next "\r\n" is.
  Input bare({"VALUE\nx\r\n"});
  Line b = find_line(bare.get(), LineEnd::crlf);
  EXPECT_EQ(b.length, 7u);
  EXPECT_EQ(b.terminator, 2u);
}

TEST(FindLine, LinesCutAcrossChainsAreFound) {
  Input crlf({"VALUE k 0 1", "0\r", "\n"});
  Line l = find_line(crlf.get(), LineEnd::crlf);
  EXPECT_EQ(l.length, 12u);  // "VALUE k 0 10"
  EXPECT_EQ(l.terminator, 2u);
  Input lf({"set k 0 0", " 1\r", "\nv\r\n"});
  EXPECT_EQ(find_line(lf.get(), LineEnd::lf).length, 12u);
}

TEST(FindLine, NoWholeLineYet) {
  Input part({"get a", " b"});
  EXPECT_FALSE(find_line(part.get(), LineEnd::lf).whole());
  Input cr({"END\r"});
  EXPECT_FALSE(find_line(cr.get(), LineEnd::crlf).whole());
  Input empty({});
  EXPECT_FALSE(find_line(empty.get(), LineEnd::crlf).whole());
}

}  // namespace
}  // namespace memshard::proxy
