// C API: backends, eager mode, execution (fExecuteGraph and friends) and gradients
// (gradient contexts, marking variables, fCalculateGradient(s)).
#include <atomic>
#include <string>
#include <vector>

#include "capi/capi.hpp"
#include "kiln/autodiff.hpp"
#include "kiln/executor.hpp"

namespace kiln::capi {

namespace {
std::atomic<bool> eager{false};
std::atomic<int> initialized{0};
// The CPU executor's thread count while its worker threads are released by flintCleanup (0: not
// released).
std::atomic<int> released_threads{0};

void init_cpu() noexcept {
  if ((initialized.fetch_or(FLINT_BACKEND_ONLY_CPU) & FLINT_BACKEND_ONLY_CPU) != 0) return;
  const int threads = released_threads.exchange(0);
  try {
    if (threads > 1) set_num_threads(threads);
  } catch (...) {
    // Without its worker threads the executor still computes, on the calling thread.
  }
  log_message(F_INFO, "flintInit: CPU backend initialized");
}

// Releases the CPU executor's worker threads (they are started again by the next
// initialization).
void cleanup_cpu() noexcept {
  if ((initialized.fetch_and(~FLINT_BACKEND_ONLY_CPU) & FLINT_BACKEND_ONLY_CPU) == 0) return;
  try {
    const int threads = num_threads();
    if (threads > 1) {
      set_num_threads(1);
      released_threads.store(threads);
    }
  } catch (...) {
  }
  log_message(F_INFO, "flintCleanup: CPU backend released");
}

// The first device executor of kiln's registry that runs here (OpenCL), opened on first use;
// OCL_ERROR when kiln has no device backend or the machine no device.
Executor& gpu() {
  try {
    static const std::shared_ptr<Executor> executor = device_executor();
    return *executor;
  } catch (const Error& e) {
    throw CError(OCL_ERROR, e.what());
  }
}

void init_gpu() {
  gpu();
  if ((initialized.fetch_or(FLINT_BACKEND_ONLY_GPU) & FLINT_BACKEND_ONLY_GPU) == 0)
    log_message(F_INFO, "flintInit: GPU (OpenCL) backend initialized");
}

bool gpu_only() noexcept { return initialized.load() == FLINT_BACKEND_ONLY_GPU; }
}  // namespace

bool eager_enabled() noexcept { return eager.load(); }

// On the GPU when it is the only backend initialized (flintInit(FLINT_BACKEND_ONLY_GPU)), else
// on the current executor (the CPU unless KILN_EXECUTOR or set_executor chose another).
void execute(CNode& node) {
  if (gpu_only()) return execute_on_gpu(node);
  init_cpu();
  node.tensor.eval();
  attach_result(node);
}

// The result is attached, and so read back to host memory; what the graph computed on the way
// stays on the device.
void execute_on_gpu(CNode& node) {
  init_gpu();
  node.tensor.eval(gpu());
  attach_result(node);
}

void execute_on_cpu(CNode& node) {
  init_cpu();
  node.tensor.eval(*cpu_executor());
  attach_result(node);
}

}  // namespace kiln::capi

using namespace kiln;
using namespace kiln::capi;

extern "C" {

// ---- backends ----------------------------------------------------------------------------------

FErrorType flintInit(int backends) {
  Call call("flintInit");
  const bool ok = guarded(call, false, [&] {
    switch (backends) {
      case FLINT_BACKEND_ONLY_CPU: init_cpu(); break;
      case FLINT_BACKEND_BOTH:
        init_cpu();
        try {
          init_gpu();
        } catch (const CError& e) {
          const std::string message = std::string("flintInit: no GPU backend (") + e.what() +
                                      "); only the CPU backend is used";
          log_message(F_WARNING, message.c_str());
        }
        break;
      case FLINT_BACKEND_ONLY_GPU: init_gpu(); break;
      default:
        throw CError(INVALID_SELECT, "unknown backend selection " + std::to_string(backends) +
                                         " (expected FLINT_BACKEND_ONLY_CPU, _ONLY_GPU or _BOTH)");
    }
    return true;
  });
  return ok ? NO_ERROR : fErrorType();
}

FErrorType flintInit_cpu(void) {
  init_cpu();
  return NO_ERROR;
}

FErrorType flintInit_gpu(void) {
  Call call("flintInit_gpu");
  return guarded(call, OCL_ERROR, []() -> FErrorType {
    init_gpu();
    return NO_ERROR;
  });
}

int flintInitializedBackends(void) { return initialized.load(); }

FErrorType flintCleanup(void) {
  cleanup_cpu();
  initialized.fetch_and(~FLINT_BACKEND_ONLY_GPU);
  return NO_ERROR;
}

FErrorType flintCleanup_cpu(void) {
  cleanup_cpu();
  return NO_ERROR;
}

FErrorType flintCleanup_gpu(void) {
  initialized.fetch_and(~FLINT_BACKEND_ONLY_GPU);
  return NO_ERROR;
}

// ---- eager mode --------------------------------------------------------------------------------

void fEnableEagerExecution(void) { eager.store(true); }
void fDisableEagerExecution(void) { eager.store(false); }
int fIsEagerExecution(void) { return eager.load() ? 1 : 0; }

// ---- execution ---------------------------------------------------------------------------------

static FGraphNode* execute_as(const char* function, FGraphNode* node, bool on_cpu = false) {
  Call call(function);
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    CNode& n = call.node(node, "node");
    if (on_cpu) execute_on_cpu(n);
    else execute(n);
    return node;
  });
}

FGraphNode* fExecuteGraph(FGraphNode* node) { return execute_as("fExecuteGraph", node); }
FGraphNode* fExecuteGraph_cpu(FGraphNode* node) {
  return execute_as("fExecuteGraph_cpu", node, true);
}
FGraphNode* fExecuteGraph_cpu_eagerly(FGraphNode* node) {
  return execute_as("fExecuteGraph_cpu_eagerly", node, true);
}
FGraphNode* fCalculateResult(FGraphNode* node) { return execute_as("fCalculateResult", node); }

static FGraphNode* gpu_execution(const char* function, FGraphNode* node) {
  Call call(function);
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&]() -> FGraphNode* {
    execute_on_gpu(call.node(node, "node"));
    return node;
  });
}

FGraphNode* fExecuteGraph_gpu(FGraphNode* node) {
  return gpu_execution("fExecuteGraph_gpu", node);
}
FGraphNode* fExecuteGraph_gpu_eagerly(FGraphNode* node) {
  return gpu_execution("fExecuteGraph_gpu_eagerly", node);
}

FResultData* fSyncMemory(FGraphNode* data) {
  Call call("fSyncMemory");
  return guarded(call, static_cast<FResultData*>(nullptr),
                 [&] { return attached_result(call.node(data, "node")); });
}

// ---- gradients ---------------------------------------------------------------------------------

void fStartGradientContext(void) { start_gradient_context(); }
void fStopGradientContext(void) { stop_gradient_context(); }
bool fIsGradientContext(void) { return in_gradient_context(); }

void fMarkGradientVariable(FGraphNode* node) {
  Call call("fMarkGradientVariable");
  guarded_void(call, [&] { call.node(node, "node").tensor.watch(); });
}

void fUnmarkGradientVariable(FGraphNode* node) {
  Call call("fUnmarkGradientVariable");
  guarded_void(call, [&] { call.node(node, "node").tensor.unwatch(); });
}

}  // extern "C"

namespace kiln::capi {
namespace {

// The type of dy/dx (decision 18, as the Flint library computes it): the larger of the two types
// in the order F_INT32 < F_INT64 < F_FLOAT32 < F_FLOAT64, and F_FLOAT64 when both are integers.
Tensor in_flint_gradient_type(const Tensor& g, DType y, DType x) {
  const DType wanted = !is_float(y) && !is_float(x) ? DType::f64
                       : static_cast<int>(y) > static_cast<int>(x) ? y
                                                                    : x;
  return g.dtype() == wanted ? g : g.to(wanted);
}

}  // namespace
}  // namespace kiln::capi

extern "C" {

FGraphNode* fCalculateGradient(FGraphNode* outputfct, FGraphNode* dx) {
  Call call("fCalculateGradient");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    const Tensor y = call.node(outputfct, "outputfct").tensor;
    const Tensor x = call.node(dx, "dx").tensor;
    const Tensor g = in_flint_gradient_type(gradient(y, x), y.dtype(), x.dtype());
    return make_node(g, op_type_of(g));
  });
}

FErrorType fCalculateGradients(FGraphNode* outputfct, FGraphNode** dx,
                               const unsigned int num_gradients, FGraphNode** gradients_out) {
  Call call("fCalculateGradients");
  std::vector<FGraphNode*> made;
  const bool ok = guarded(call, false, [&] {
    const Tensor y = call.node(outputfct, "outputfct").tensor;
    if (num_gradients == 0) return true;
    call.array(dx, "dx");
    call.array(gradients_out, "gradients");
    std::vector<Tensor> xs;
    for (unsigned int i = 0; i < num_gradients; ++i)
      xs.push_back(call.node(dx[i], ("dx[" + std::to_string(i) + "]").c_str()).tensor);
    const std::vector<Tensor> gs = gradients(y, xs);
    made.reserve(gs.size());
    for (std::size_t i = 0; i < gs.size(); ++i) {
      const Tensor g = in_flint_gradient_type(gs[i], y.dtype(), xs[i].dtype());
      made.push_back(make_node(g, op_type_of(g)));
    }
    for (std::size_t i = 0; i < made.size(); ++i) gradients_out[i] = made[i];
    made.clear();
    return true;
  });
  if (ok) return NO_ERROR;
  // Nodes made before the failure are unknown to the caller: free them (they have no users).
  for (FGraphNode* g : made) fFreeGraph(g);
  return fErrorType();
}

}  // extern "C"
