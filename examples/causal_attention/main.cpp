// Causal self-attention and its gradient. Checks one weight gradient against a central finite
// difference of the same forward pass in f64, and checks causality: the output at time t does
// not change when the input after t does. Exits with 1 on failure, so it runs as a test.
//
// Differences from libtorch worth knowing:
// - Ops only build a graph; reading a value (item(), to_vector(), printing) evaluates it.
// - Variables are marked with watch() instead of requires_grad, only ops built inside a
//   kiln::GradientContext are differentiable, and kiln::gradients(y, xs) returns d sum(y)/dx for
//   each x (like torch::autograd::grad) instead of filling x.grad().
#include <kiln/kiln.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

using kiln::Tensor;
using namespace kiln::indexing;  // Slice, None, Ellipsis, as torch::indexing

// out = softmax(mask(q k^T / sqrt(C))) v with q = x Wq, k = x Wk, v = x Wv; x [B, T, C].
// Works in whatever float type its inputs have.
Tensor attention(const Tensor& x, const Tensor& Wq, const Tensor& Wk, const Tensor& Wv) {
  const std::int64_t T = x.size(1), C = x.size(2);
  // [B, T, C] x [C, C]: the leading (batch) dimensions of matmul broadcast, as in libtorch.
  const Tensor q = kiln::matmul(x, Wq), k = kiln::matmul(x, Wk), v = kiln::matmul(x, Wv);
  const Tensor scores = kiln::matmul(q, kiln::transpose(k, -2, -1)) / std::sqrt(double(C));
  // Lower triangle of ones: position t sees positions <= t. The mask [T, T] broadcasts over B.
  // ones() gives the default float type; the comparison gives an i32 0/1 tensor (no bool dtype).
  const Tensor future = kiln::tril(kiln::ones({T, T})) == 0;
  // The weak scalar -inf takes the type of scores (f32 or f64).
  const Tensor att = kiln::softmax(
      kiln::masked_fill(scores, future, -std::numeric_limits<double>::infinity()), -1);
  return kiln::matmul(att, v);  // [B, T, C]
}

int main() {
  constexpr std::int64_t B = 2, T = 8, C = 16;
  constexpr std::uint64_t seed = 7;
  const double scale = 1.0 / std::sqrt(double(C));
  // f32 inputs (the default float type); detach() makes them leaves, watch() marks them.
  const Tensor x = kiln::random_normal({B, T, C}, seed).detach().watch();
  const Tensor Wq = (kiln::random_normal({C, C}, seed + 1) * scale).detach().watch();
  const Tensor Wk = (kiln::random_normal({C, C}, seed + 2) * scale).detach().watch();
  const Tensor Wv = (kiln::random_normal({C, C}, seed + 3) * scale).detach().watch();
  const Tensor R = kiln::random_normal({B, T, C}, seed + 4);  // fixed weights of the loss

  Tensor loss;
  {
    kiln::GradientContext ctx;
    loss = kiln::sum(attention(x, Wq, Wk, Wv) * R);
  }
  const auto g = kiln::gradients(loss, {x, Wq, Wk, Wv});  // f32, shaped like each input
  kiln::eval_all({loss, g[0], g[1], g[2], g[3]});  // one pass for the loss and all gradients
  std::printf("loss = %.6f\n", loss.item<float>());
  std::printf("|dloss/dx| = %.6f  |dloss/dWq| = %.6f  |dloss/dWk| = %.6f  |dloss/dWv| = %.6f\n",
              kiln::norm(g[0]).item<float>(), kiln::norm(g[1]).item<float>(),
              kiln::norm(g[2]).item<float>(), kiln::norm(g[3]).item<float>());
  bool ok = true;

  // 1. Finite difference of dloss/dWq[i][j], with the forward pass rebuilt in f64 (to(f64)
  //    converts; outside a gradient context nothing here records a gradient graph).
  const std::int64_t i = 3, j = 5;
  const double h = 1e-5;
  const Tensor x64 = x.to(kiln::DType::f64), R64 = R.to(kiln::DType::f64);
  const Tensor Wk64 = Wk.to(kiln::DType::f64), Wv64 = Wv.to(kiln::DType::f64);
  // A one-hot [C, C] direction: (row index == i) & (column index == j), as f64.
  const Tensor e = kiln::logical_and(kiln::arange({C, C}, 0) == i, kiln::arange({C, C}, 1) == j)
                       .to(kiln::DType::f64);
  auto loss64 = [&](double delta) {
    const Tensor Wq64 = Wq.to(kiln::DType::f64) + delta * e;
    return kiln::sum(attention(x64, Wq64, Wk64, Wv64) * R64).item<double>();
  };
  const double numeric = (loss64(h) - loss64(-h)) / (2 * h);
  const double analytic = g[1].at<double>({i, j});  // g[1] is f32; at<double> converts
  const double rel = std::abs(analytic - numeric) / std::max(1e-6, std::abs(numeric));
  std::printf("dloss/dWq[%ld][%ld]: autodiff (f32) %.7f, central difference (f64) %.7f, "
              "relative error %.2e\n", long(i), long(j), analytic, numeric, rel);
  if (!(rel < 1e-3)) {
    std::printf("FAILED: gradient does not match the finite difference\n");
    ok = false;
  }

  // 2. Causality: perturbing x after time t0 leaves out[:, :t0+1] unchanged (and changes the rest).
  const Tensor out = attention(x, Wq, Wk, Wv).eval();
  const Tensor noise = kiln::random_normal({B, T, C}, seed + 5);
  double worst_past = 0;
  for (std::int64_t t0 = 0; t0 + 1 < T; ++t0) {
    // Times > t0, as an i32 [1, T, 1] mask that where() broadcasts over [B, T, C].
    const Tensor later = kiln::arange(T).reshape({1, T, 1}) > t0;
    const Tensor out2 = attention(kiln::where(later, x + noise, x), Wq, Wk, Wv);
    const auto past = Slice(None, t0 + 1), future = Slice(t0 + 1, None);
    const double d_past = kiln::max(kiln::abs(out2.index({All, past}) - out.index({All, past})))
                              .item<double>();
    const double d_future =
        kiln::max(kiln::abs(out2.index({All, future}) - out.index({All, future}))).item<double>();
    worst_past = std::max(worst_past, d_past);
    if (!(d_past <= 1e-6) || !(d_future > 1e-3)) {
      std::printf("FAILED at t0 = %ld: change in out[:, :t0+1] %.3g, in out[:, t0+1:] %.3g\n",
                  long(t0), d_past, d_future);
      ok = false;
    }
  }
  std::printf("causality: largest change of out[:, :t+1] when x[:, t+1:] is perturbed, over all "
              "t: %.3g\n", worst_past);
  std::printf("%s\n", ok ? "all checks passed" : "CHECKS FAILED");
  return ok ? 0 : 1;
}
