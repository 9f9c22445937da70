#include "exec/fallback_log.hpp"

#include <map>
#include <mutex>
#include <vector>

#include "graph/node.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail {

namespace {

struct FallbackLog {
  std::mutex mutex;
  // "backend: kind op dtype" -> (reason, kernels run so)
  std::map<std::string, std::pair<std::string, std::uint64_t>> entries;
};
FallbackLog& log() {
  static auto* instance = new FallbackLog;  // never destroyed: kernels may run at exit
  return *instance;
}

}  // namespace

void note_fallback(std::string_view backend, const Kernel& k, const std::string& reason) {
  const Node& root = *k.root;
  std::string key(backend);
  key += ": ";
  key += kind_name(k.kind);
  key += " ";
  key += root.info().name;
  key += " ";
  key += dtype_name(root.dtype);
  FallbackLog& l = log();
  std::lock_guard lock(l.mutex);
  auto& [why, count] = l.entries[key];
  if (why.empty()) why = reason;
  ++count;
}

}  // namespace detail

std::vector<ExecutorReportLine> executor_report() {
  detail::FallbackLog& l = detail::log();
  std::lock_guard lock(l.mutex);
  std::vector<ExecutorReportLine> lines;
  lines.reserve(l.entries.size());
  for (const auto& [key, entry] : l.entries) {
    const auto colon = key.find(": ");
    lines.push_back({key.substr(0, colon), key.substr(colon + 2), entry.first, entry.second});
  }
  return lines;
}

}  // namespace kiln
