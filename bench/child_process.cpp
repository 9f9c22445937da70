#include "child_process.hpp"

#include <kiln/error.hpp>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>

namespace bench {

namespace {

void set_error(SideResult& r, const std::string& message) {
  std::snprintf(r.error, sizeof r.error, "%s", message.c_str());
}

bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until `size` bytes or end of file; returns the number of bytes read.
std::size_t read_all(int fd, void* data, std::size_t size) {
  char* p = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

[[noreturn]] void child_main(int fd, const std::function<void(SideResult&)>& work) {
  SideResult r;
  try {
    work(r);
    r.ok = true;
  } catch (const kiln::Error& e) {
    set_error(r, std::string("kiln error (") + kiln::error_code_name(e.code()) + "): " + e.what());
  } catch (const std::exception& e) {
    set_error(r, e.what());
  } catch (...) {
    set_error(r, "unknown exception");
  }
  const bool sent = write_all(fd, &r, sizeof r);
  close(fd);
  // Whatever the side printed must not be lost: _exit does not flush stdio.
  std::cout.flush();
  std::fflush(nullptr);
  _exit(sent && r.ok ? 0 : 1);
}

}  // namespace

ChildOutcome run_in_child(const std::function<void(SideResult&)>& work) {
  ChildOutcome out;
  int fds[2];
  if (pipe(fds) != 0) {
    out.failure = std::string("pipe failed: ") + std::strerror(errno);
    return out;
  }
  // Buffered output would otherwise be printed twice, once by each process.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    out.failure = std::string("fork failed: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(fds[1], work);
  }
  close(fds[1]);
  const std::size_t got = read_all(fds[0], &out.result, sizeof out.result);
  close(fds[0]);

  int status = 0;
  rusage usage{};
  pid_t waited;
  do waited = wait4(pid, &status, 0, &usage);
  while (waited < 0 && errno == EINTR);
  if (waited != pid) {
    out.failure = std::string("wait4 failed: ") + std::strerror(errno);
    return out;
  }
  out.peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: kilobytes

  if (got == sizeof out.result && !out.result.ok) {
    out.failure = out.result.error;
  } else if (WIFSIGNALED(status)) {
    out.failure = std::string("the child process was killed by signal ") +
                  std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  } else if (got != sizeof out.result) {
    out.failure = "the child process exited (status " +
                  std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                  ") without reporting a result";
  } else {
    out.ok = true;
  }
  return out;
}

double current_rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long total_pages = 0, resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return -1;
  return static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

bool reset_peak_rss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  if (!clear_refs) return false;
  clear_refs << "5";
  clear_refs.flush();
  return static_cast<bool>(clear_refs);
}

}  // namespace bench
