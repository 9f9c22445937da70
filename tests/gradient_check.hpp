// Central differences of real functions of one f64 tensor, for the tests of gradients.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "kiln/kiln.hpp"

namespace kiln_test {

// Checks the gradient of f (a 0-d f64 result) with respect to its input at `points` against
// central differences, each within tolerance * (1 + |difference|).
inline void expect_gradient_near_differences(
    const std::function<kiln::Tensor(const kiln::Tensor&)>& f, const std::vector<double>& points,
    double tolerance) {
  const kiln::Tensor x = kiln::Tensor::from(points).watch();
  kiln::Tensor g;
  {
    kiln::GradientContext ctx;
    g = kiln::gradient(f(x), x);
  }
  EXPECT_EQ(g.dtype(), kiln::DType::f64);
  const std::vector<double> got = g.to_vector<double>();
  constexpr double h = 1e-6;
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<double> up = points, down = points;
    up[i] += h;
    down[i] -= h;
    const double want = (f(kiln::Tensor::from(up)).item<double>() -
                         f(kiln::Tensor::from(down)).item<double>()) /
                        (2 * h);
    EXPECT_NEAR(got[i], want, tolerance * (1 + std::abs(want))) << "element " << i;
  }
}

}  // namespace kiln_test
