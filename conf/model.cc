#include "conf/model.h"

namespace memshard::conf {

std::string_view write_policy_name(WritePolicy p) {
  switch (p) {
    case WritePolicy::first:
      return "first";
    case WritePolicy::majority:
      return "majority";
    case WritePolicy::all:
      return "all";
  }
  return "first";
}

const PoolConfig* Config::find_pool(const std::string& name) const {
  for (const PoolConfig& p : pools) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string ConfigError::to_string() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!directive.empty()) out += directive + ": ";
  return out + message;
}

}  // namespace memshard::conf
