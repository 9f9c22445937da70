// Ops the CPU executor has no kernel of its own for run the reference kernel, and say so:
// KILN_DEBUG=1 prints a line for each such kernel and KILN_PROFILE=1 labels its time. ctest runs
// these tests once more with KILN_DEBUG=1 (cpu.reference_kernels_are_named) and checks the line.
// Copies and concatenation are not among them: they go through the strided reader.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kiln/kiln.hpp"

namespace {

using kiln::Tensor;

TEST(ReferenceFallbacks, IntegerMatmulIsComputed) {
  const Tensor a = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor p = kiln::matmul(a, kiln::transpose(a, 0, 1));
  EXPECT_EQ(p.to_vector<std::int32_t>(), (std::vector<std::int32_t>{14, 32, 32, 77}));
}

TEST(ReferenceFallbacks, CopiesAndConcatenationThroughViews) {
  const Tensor a = Tensor::from(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor t = kiln::transpose(kiln::reshape(a, {3, 2}), 0, 1);  // [[1,3,5],[2,4,6]]
  EXPECT_EQ(kiln::concat({a, t}, 1).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 2, 3, 1, 3, 5, 4, 5, 6, 2, 4, 6}));
  EXPECT_EQ(kiln::concat({t, kiln::slice(a, {1, 0}, {2, 3})}, 0).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 3, 5, 2, 4, 6, 4, 5, 6}));
  EXPECT_EQ(kiln::contiguous(kiln::transpose(a, 0, 1)).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 4, 2, 5, 3, 6}));
}

}  // namespace
