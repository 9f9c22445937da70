// The process group of a build without MPI: the API is there, and says what it lacks.
#include "distributed/world.hpp"
#include "kiln/error.hpp"

namespace kiln::distributed::detail {

namespace {
[[noreturn]] void absent(const char* op) {
  throw Error(ErrorCode::io_error,
              std::string("distributed::") + op +
                  ": kiln was built without MPI (install libopenmpi-dev and configure again)");
}
}  // namespace

bool world_available() { return false; }
void world_init(std::chrono::milliseconds) { absent("init"); }
bool world_initialized() { return false; }
void world_finalize() {}
int world_rank(const char* op) { absent(op); }
int world_size(const char* op) { absent(op); }
void world_set_timeout(std::chrono::milliseconds) { absent("set_timeout"); }
std::shared_future<void> world_submit(std::shared_ptr<Transfer> t) { absent(t->op_name); }

}  // namespace kiln::distributed::detail
