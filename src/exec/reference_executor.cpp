// The reference backend, the oracle every other backend is tested against: one op per kernel,
// each computed by its reference kernel (reference_kernels.hpp), the definition of the op's
// values. It runs under the runtime like every backend, so it shares the walk, the schedule
// cache and the release of intermediate results, but nothing that decides values: its policy
// fuses nothing, and it never takes the memory plan's offers to compute in place (an in-place
// update on another backend is then checked against a computation into fresh memory).
#include <memory>
#include <string>

#include "exec/backend.hpp"
#include "exec/reference_kernels.hpp"
#include "exec/runtime.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"

namespace kiln {

namespace detail {
namespace {

class ReferenceBackend final : public Backend {
 public:
  std::string_view name() const override { return "reference"; }

  FusionPolicy fusion() const override {
    FusionPolicy one_op_per_kernel;
    one_op_per_kernel.chains = false;
    one_op_per_kernel.into_reductions = false;
    one_op_per_kernel.multi_output = false;
    one_op_per_kernel.max_ops = 1;
    one_op_per_kernel.narrow_types = true;  // run_reference_kernel computes them widened
    one_op_per_kernel.complex_types = true;
    return one_op_per_kernel;
  }

  KernelOutcome run(const KernelRun& r) override {
    const Kernel& k = r.kernel;
    if (!k.stored.empty() || k.body.size() > 1) {
      std::string message = "reference backend: a fused kernel of ";
      message += k.root->info().name;
      message += " (its policy fuses nothing)";
      throw Error(ErrorCode::internal_error, message);
    }
    auto out = std::make_shared<Buffer>(k.root->dtype, k.root->numel());
    run_reference_kernel(*k.root, *out);
    k.root->result = std::move(out);
    return KernelOutcome::ran;
  }
};

}  // namespace
}  // namespace detail

std::shared_ptr<Executor> reference_executor() {
  static const auto instance = detail::make_runtime(std::make_unique<detail::ReferenceBackend>());
  return instance;
}

}  // namespace kiln
