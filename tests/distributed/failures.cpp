// A rank that never joins, or never reaches a collective, makes the others fail with a clear
// error within the timeout. Run under `mpirun -np 2` by ctest, which reads the verdicts:
//   failures late-join   rank 1 starts init() long after rank 0's timeout
//   failures stalled     rank 1 stops before a barrier rank 0 waits in
//   failures dies        rank 1 exits with an error while rank 0 waits in a collective
// In the first two the waiting rank prints "PASS: <error>" and leaves without finalising (its
// process group has failed); the launcher then ends the job, as it would on a cluster. In the
// third the launcher ends rank 0 before its (long) timeout: ctest checks mpirun's report and that
// the job ended in time.
#include <kiln/distributed.hpp>
#include <kiln/kiln.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

namespace dist = kiln::distributed;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto timeout = std::chrono::seconds(2);

int launcher_rank() {
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  return r == nullptr ? 0 : std::atoi(r);
}

// The error came within the timeout and a margin, and says what happened.
int verdict(const kiln::Error& e, Clock::time_point start, const char* expected) {
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string m = e.what();
  const bool ok = seconds < 2.0 + 3.0 && m.find(expected) != std::string::npos &&
                  e.code() == kiln::ErrorCode::io_error;
  std::cout << (ok ? "PASS" : "FAIL") << " after " << seconds << " s: " << m << std::endl;
  std::_Exit(ok ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "late-join") {
    if (launcher_rank() == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(30));  // ended by the launcher first
      std::_Exit(0);
    }
    const auto start = Clock::now();
    try {
      dist::init({.timeout = timeout});
    } catch (const kiln::Error& e) {
      verdict(e, start, "not every rank joined within 2000 ms");
    }
    std::cout << "FAIL: init returned without rank 1" << std::endl;
    return 1;
  }
  if (mode == "stalled") {
    dist::init({.timeout = timeout});
    if (dist::rank() == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(30));
      std::_Exit(0);
    }
    const auto start = Clock::now();
    try {
      dist::all_reduce(kiln::ones({4}));
    } catch (const kiln::Error& e) {
      verdict(e, start, "did not complete within 2000 ms");
    }
    std::cout << "FAIL: all_reduce returned without rank 1" << std::endl;
    return 1;
  }
  if (mode == "dies") {
    dist::init({.timeout = std::chrono::seconds(60)});
    dist::barrier();
    if (dist::rank() == 1) std::_Exit(3);
    dist::all_reduce(kiln::ones({4}));
    std::cout << "FAIL: all_reduce returned without rank 1" << std::endl;
    return 1;
  }
  std::cerr << "usage: failures late-join|stalled|dies\n";
  return 2;
}
