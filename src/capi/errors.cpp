// C API: the per-thread error state (fErrorType, fErrorMessage), error messages naming the
// function and its operand shapes, and logging (fSetLoggingLevel, flogging).
#include <atomic>
#include <cctype>
#include <cstdio>
#include <string>

#include "capi/capi.hpp"

namespace kiln::capi {

namespace {

thread_local FErrorType last_type = NO_ERROR;
thread_local std::string last_message;

std::atomic<int> logging_level{F_ERROR};

const char* level_name(FLogType type) {
  switch (type) {
    case F_ERROR: return "error";
    case F_WARNING: return "warning";
    case F_INFO: return "info";
    case F_VERBOSE: return "verbose";
    case F_DEBUG: return "debug";
    case F_NO_LOGGING: break;
  }
  return "log";
}

// kiln's messages start with the name of the C++ op ("matmul: ..."); the C message names the C
// function instead.
std::string without_op_prefix(const std::string& what) {
  std::size_t i = 0;
  while (i < what.size() &&
         (std::islower(static_cast<unsigned char>(what[i])) ||
          std::isdigit(static_cast<unsigned char>(what[i])) || what[i] == '_'))
    ++i;
  if (i > 0 && i + 1 < what.size() && what[i] == ':' && what[i + 1] == ' ')
    return what.substr(i + 2);
  return what;
}

}  // namespace

bool logging_enabled(FLogType type) noexcept {
  return type != F_NO_LOGGING && static_cast<int>(type) <= logging_level.load();
}

void log_message(FLogType type, const char* message) noexcept {
  if (!logging_enabled(type)) return;
  std::fprintf(stderr, "kiln %s: %s\n", level_name(type), message ? message : "(null)");
  std::fflush(stderr);
}

void set_error(FErrorType code, const char* message) noexcept {
  last_type = code;
  try {
    last_message = message;
  } catch (...) {
    last_message.clear();  // keeps the capacity it had: cannot throw
  }
  log_message(F_ERROR, last_message.empty() ? message : last_message.c_str());
}

void Call::fail(FErrorType code, const std::string& what, bool from_kiln) const noexcept {
  try {
    std::string message = function_;
    message.append(": ").append(from_kiln ? without_op_prefix(what) : what);
    bool named = true;
    std::string shapes;
    for (const Shape& s : shapes_) {
      const std::string text = shape_to_string(s);
      named = named && message.find(text) != std::string::npos;
      if (!shapes.empty()) shapes.append(", ");
      shapes.append(text);
    }
    if (!named) {
      message.append(shapes_.size() == 1 ? " (operand shape " : " (operand shapes ");
      message.append(shapes).append(")");
    }
    set_error(code, message.c_str());
  } catch (...) {
    set_error(code, function_);
  }
}

}  // namespace kiln::capi

using namespace kiln::capi;

extern "C" {

FErrorType fErrorType(void) { return last_type; }

const char* fErrorMessage(void) { return last_message.c_str(); }

void fSetLoggingLevel(enum FLogType type) {
  Call call("fSetLoggingLevel");
  guarded_void(call, [&] {
    const int level = static_cast<int>(type);
    if (level < F_NO_LOGGING || level > F_DEBUG)
      throw CError(INVALID_SELECT, "level " + std::to_string(level) +
                                       " outside 0-5; the level stays " +
                                       std::to_string(logging_level.load()));
    logging_level.store(level);
  });
}

void flogging(enum FLogType type, const char* msg) { log_message(type, msg); }

}  // extern "C"
