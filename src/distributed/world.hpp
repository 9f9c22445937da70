// The process group under kiln::distributed: one communication thread per process owns MPI
// (initialised, called and finalised there only), runs the collectives in the order they were
// submitted, and reports each one's end through a future. The tensor-level functions
// (collectives.cpp) never see MPI; mpi_world.cpp implements this with it and without_mpi.cpp
// says it is absent.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>

#include "kiln/distributed.hpp"
#include "kiln/types.hpp"

namespace kiln::distributed::detail {

enum class Collective : std::int64_t { barrier = 1, all_reduce, broadcast, all_gather, reduce_scatter };

const char* collective_name(Collective c);

// One collective: `input` holds `count` elements of `wire_dtype`, `output`
// receives the result (count elements, world_size * count for all_gather, count / world_size
// for reduce_scatter). `shape` and `dtype` of the user's tensor go into the header every rank
// compares before any data moves.
struct Transfer {
  Collective kind = Collective::barrier;
  const char* op_name = "";  // the function the user called, for messages
  DType user_dtype = DType::f32;
  Shape user_shape;
  DType wire_dtype = DType::f32;
  ReduceOp reduce = ReduceOp::sum;
  int root = 0;
  std::shared_ptr<const void> input;  // keeps the operand's storage alive while it is sent
  std::shared_ptr<void> output;
  std::int64_t count = 0;
};

bool world_available();
void world_init(std::chrono::milliseconds timeout);
bool world_initialized();
void world_finalize();
int world_rank(const char* op);
int world_size(const char* op);
void world_set_timeout(std::chrono::milliseconds timeout);
// Queues `t` behind every collective submitted before it; the future ends when its output is
// complete, or holds its kiln::Error.
std::shared_future<void> world_submit(std::shared_ptr<Transfer> t);

}  // namespace kiln::distributed::detail
