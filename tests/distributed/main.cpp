// The multi-process tests: every rank runs every test in the same order (each test is a sequence
// of collectives), started by ctest under `mpirun -np 2` over shared memory and over TCP.
#include <gtest/gtest.h>
#include <kiln/distributed.hpp>

#include <chrono>
#include <iostream>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // A test that fails on one rank leaves the other waiting in a collective: a short timeout
  // turns that into a failure instead of a hang.
  kiln::distributed::init({.timeout = std::chrono::seconds(60)});
  const int rank = kiln::distributed::rank();
  if (rank != 0) {
    // One report (rank 0's); the other ranks still fail the run through their exit status.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  if (failed != 0) std::cerr << "rank " << rank << ": tests failed\n";
  kiln::distributed::finalize();
  return failed;
}
