#include "proxy/admin/json_writer.h"

#include <cmath>
#include <cstdio>

namespace memshard::proxy {

void json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out.append(buf);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;
  if (!first_.back()) out_.append(", ");
  first_.back() = false;
}

void JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  first_.push_back(true);
}

void JsonWriter::end_object() {
  out_.push_back('}');
  first_.pop_back();
}

void JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  first_.push_back(true);
}

void JsonWriter::end_array() {
  out_.push_back(']');
  first_.pop_back();
}

void JsonWriter::key(std::string_view name) {
  separate();
  json_string(out_, name);
  out_.append(": ");
  after_key_ = true;
}

void JsonWriter::string(std::string_view s) {
  separate();
  json_string(out_, s);
}

void JsonWriter::number(uint64_t v) {
  separate();
  out_.append(std::to_string(v));
}

void JsonWriter::number(int64_t v) {
  separate();
  out_.append(std::to_string(v));
}

void JsonWriter::number(double v) {
  separate();
  if (!std::isfinite(v)) {
    out_.append("null");
    return;
  }
  char buf[32];
  snprintf(buf, sizeof(buf), "%.6g", v);
  out_.append(buf);
}

void JsonWriter::boolean(bool v) {
  separate();
  out_.append(v ? "true" : "false");
}

void JsonWriter::null() {
  separate();
  out_.append("null");
}

}  // namespace memshard::proxy
