// Linear regression with a hand-written gradient descent loop (no nn::Optimizer), the way one
// writes it first in libtorch. Exits with 1 when the fit is bad, so it runs as a test.
//
// Differences from libtorch worth knowing:
// - Nothing is computed when an op is called: ops build a graph, and reading a value (item(),
//   printing, eval()) evaluates it.
// - There is no requires_grad/NoGradGuard pair: a tensor is marked with watch(), and only ops
//   built inside a kiln::GradientContext are differentiable. Everything built outside one (the
//   backward graph, the update) records no history.
// - kiln::gradients(loss, {w, b}) returns the gradients (like torch::autograd::grad) instead of
//   filling w.grad().
// - matmul needs two operands of at least 2 dimensions, so w is a [D, 1] column, not a [D] vector.
// - A loop of identical steps can be compiled once (kiln::compile, at the end): no graph is built
//   or scheduled per step.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <kiln/kiln.hpp>
#include <vector>

static double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

int main() {
  constexpr std::int64_t N = 256, D = 3;  // samples, features
  constexpr int steps = 300, print_every = 30;
  constexpr float lr = 0.02f;

  // Synthetic data y = X w_true + b_true + noise. A seed makes a random tensor reproducible;
  // kiln::manual_seed(s) would seed the unseeded ones instead, as torch::manual_seed does.
  const auto w_true = kiln::tensor({{2.f}, {-3.f}, {0.5f}});  // f32 [3, 1]
  const float b_true = 1.25f;
  const auto X = kiln::random_normal({N, D}, /*seed=*/1);             // f32 [N, D]
  const auto noise = 0.1f * kiln::random_normal({N, 1}, /*seed=*/2);  // f32 [N, 1]
  const auto y = (kiln::matmul(X, w_true) + b_true + noise).eval();   // evaluated once

  // Parameters: f32 leaves marked as variables (libtorch: torch::zeros(..., requires_grad)).
  auto w = kiln::zeros({D, 1}).watch();  // zeros() gives the default float type, f32
  auto b = kiln::zeros({1}).watch();

  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step <= steps; ++step) {
    kiln::Tensor loss;
    {
      kiln::GradientContext ctx;  // the forward graph is differentiable while ctx lives
      loss = kiln::mean(kiln::square(kiln::matmul(X, w) + b - y));
    }
    const auto g = kiln::gradients(loss, {w, b});  // {dloss/dw, dloss/db}, shaped like w and b

    // Scalars are weak: lr * g[0] stays f32, as in libtorch. Graphs are immutable, so there is no
    // in-place `w -= lr * grad`: each step makes new parameter tensors.
    auto w_next = w - lr * g[0];
    auto b_next = b - lr * g[1];
    // Forward, backward and update in one evaluation pass (separate item() calls would each
    // evaluate the part of the graph they need, recomputing the forward pass).
    kiln::eval_all({loss, w_next, b_next});
    if (step % print_every == 0) std::printf("step %3d  loss %.6f\n", step, loss.item<float>());
    // detach() gives a new leaf sharing the computed values, with no graph behind it, and
    // watch() marks it for the next step. Rebinding w and b drops the last handles to this step's
    // graph (loss, gradients), so memory stays bounded however many steps run.
    w = w_next.detach().watch();
    b = b_next.detach().watch();
  }

  const double eager_ms = elapsed_ms(start) / (steps + 1);

  // The same training as a compiled function (Theano's `function` with `updates`): the step's
  // graph is built and differentiated once over placeholders for the data, then each call binds
  // the data, runs the prepared kernels and stores the new parameters in wc and bc. The results
  // are the loop's, bit for bit.
  auto wc = kiln::zeros({D, 1}).eval().watch();
  auto bc = kiln::zeros({1}).eval().watch();
  const auto xs = kiln::placeholder({N, D}, kiln::DType::f32, "x");
  const auto ys = kiln::placeholder({N, 1}, kiln::DType::f32, "y");
  kiln::Tensor compiled_loss;
  {
    kiln::GradientContext ctx;
    compiled_loss = kiln::mean(kiln::square(kiln::matmul(xs, wc) + bc - ys));
  }
  const auto gc = kiln::gradients(compiled_loss, {wc, bc});
  kiln::CompileOptions options;
  options.updates = {{wc, wc - lr * gc[0]}, {bc, bc - lr * gc[1]}};
  const kiln::Function train_step = kiln::compile({xs, ys}, {compiled_loss}, options);
  start = std::chrono::steady_clock::now();
  for (int step = 0; step <= steps; ++step) (void)train_step(X, y);
  const double compiled_ms = elapsed_ms(start) / (steps + 1);
  const bool same =
      wc.to_vector<float>() == w.to_vector<float>() && bc.item<float>() == b.item<float>();
  std::printf("\nper step: %.3f ms built each time, %.3f ms compiled; %s\n", eager_ms, compiled_ms,
              same ? "same parameters" : "THE COMPILED STEP GAVE OTHER PARAMETERS");

  const auto learned = w.to_vector<float>();
  const auto target = w_true.to_vector<float>();
  const float learned_b = b.item<float>();
  bool ok = same && std::abs(learned_b - b_true) < 0.05f;
  std::printf("\n      learned     true\n");
  for (std::int64_t i = 0; i < D; ++i) {
    std::printf("w[%ld] %8.4f %8.4f\n", static_cast<long>(i), learned[i], target[i]);
    ok = ok && std::abs(learned[i] - target[i]) < 0.05f;
  }
  std::printf("b    %8.4f %8.4f\n", learned_b, b_true);
  std::printf("%s\n", ok ? "fit OK" : "FIT FAILED: learned parameters are more than 0.05 off");
  return ok ? 0 : 1;
}
