#include "exec/kernel_profile.hpp"

#include "kiln/error.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::detail {

namespace {

struct Entry {
  double seconds = 0;
  long count = 0;
};

// The groups live until exit and print from their destructor, so a program needs no call to
// see the summary.
class Profile {
 public:
  void add(const std::string& label, double seconds) {
    std::lock_guard lock(mutex_);
    Entry& e = entries_[label];
    e.seconds += seconds;
    ++e.count;
  }
  ~Profile() {
    std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0;
    for (const auto& [label, e] : rows) total += e.seconds;
    std::fprintf(stderr, "[kiln] profile: %.3f s in kernels and scheduling\n", total);
    std::fprintf(stderr, "%10s %6s %8s %10s  %s\n", "ms", "%", "count", "us/call", "kernel");
    for (const auto& [label, e] : rows)
      std::fprintf(stderr, "%10.1f %6.1f %8ld %10.1f  %s\n", e.seconds * 1e3,
                   total > 0 ? 100 * e.seconds / total : 0.0, e.count, 1e6 * e.seconds / e.count,
                   label.c_str());
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

Profile& profile() {
  static Profile instance;
  return instance;
}

}  // namespace

bool profiling_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_PROFILE");
    const bool enabled = v != nullptr && v[0] != '\0' && v[0] != '0';
    if (enabled) profile();  // constructed now, so it is destroyed (and prints) late
    return enabled;
  }();
  return on;
}

void profile_kernel(const Kernel& k, double seconds, bool reference_fallback) {
  std::ostringstream label;
  label << kind_name(k.kind) << " " << k.root->info().name << " " << dtype_name(k.root->dtype)
        << shape_to_string(k.root->shape);
  if (!k.body.empty()) {
    label << " [";
    for (std::size_t i = 0; i < k.body.size(); ++i)
      label << (i ? " " : "") << k.body[i]->info().name;
    label << "]";
  }
  if (reference_fallback) label << " (reference kernel)";
  profile().add(label.str(), seconds);
}

void profile_label(const char* label, double seconds) { profile().add(label, seconds); }

}  // namespace kiln::detail
