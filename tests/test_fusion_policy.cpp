// The schedule under a backend's fusion policy: each capability a backend lacks cuts the
// schedule where it would be needed, with the reason describe() prints; the default policy is
// the CPU backend's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/fusion.hpp"
#include "graph/node.hpp"
#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
using kiln::detail::FusionPolicy;
using kiln::detail::Kernel;

std::vector<Kernel> schedule_of(const Tensor& target, const FusionPolicy& policy) {
  kiln::detail::Node* nodes[] = {target.node().get()};
  return kiln::detail::schedule(nodes, policy);
}

bool mentions(const std::vector<Kernel>& kernels, const std::string& reason) {
  return kiln::detail::describe(kernels).find(reason) != std::string::npos;
}

TEST(FusionPolicy, ChainsAndReductions) {
  const Tensor x = kiln::uniform({64, 32}, 1, DType::f32).eval();
  const Tensor chain = kiln::exp(kiln::log(x) + 1.f);
  EXPECT_EQ(schedule_of(chain, {}).size(), 1u);
  FusionPolicy single;
  single.chains = false;
  const auto cut = schedule_of(chain, single);
  EXPECT_EQ(cut.size(), 3u);  // log, + 1, exp
  EXPECT_TRUE(mentions(cut, "this backend fuses no chains")) << kiln::detail::describe(cut);

  const Tensor reduced = kiln::sum(kiln::square(x), {1});
  EXPECT_EQ(schedule_of(reduced, {}).size(), 1u);
  FusionPolicy no_reduce;
  no_reduce.into_reductions = false;
  const auto split = schedule_of(reduced, no_reduce);
  EXPECT_EQ(split.size(), 2u);
  EXPECT_TRUE(mentions(split, "this backend does not fuse into reductions"));
}

TEST(FusionPolicy, ReorderingViewsAndHostCallables) {
  const Tensor x = kiln::uniform({64, 32}, 2, DType::f32).eval();
  // A producer read through a transposition: the CPU interpreter cuts there, an indexing code
  // generator need not.
  const Tensor transposed = kiln::transpose(kiln::exp(x), 0, 1) + 1.f;
  const auto cpu = schedule_of(transposed, {});
  EXPECT_EQ(cpu.size(), 2u);
  EXPECT_TRUE(mentions(cpu, "read through a view that reorders elements"));
  FusionPolicy indexing;
  indexing.reordering_views = true;
  EXPECT_EQ(schedule_of(transposed, indexing).size(), 1u);

  // A C++ callable inside a fused kernel runs on the host only.
  const Tensor mapped = kiln::map_elements(x, [](double v) { return 2 * v; }) + 1.f;
  EXPECT_EQ(schedule_of(mapped, {}).size(), 1u);
  FusionPolicy device;
  device.host_callables = false;
  const auto apart = schedule_of(mapped, device);
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_EQ(apart[0].kind, Kernel::Kind::single);
  EXPECT_TRUE(mentions(apart, "a host callable (custom_map) runs on the host"));
}

TEST(FusionPolicy, MultiOutput) {
  // An optimiser's new state m and the value computed from it, both wanted: one pass that stores
  // both, unless the backend's kernels store one result each.
  const Tensor m0 = kiln::uniform({100}, 3, DType::f32).eval();
  const Tensor g = kiln::uniform({100}, 4, DType::f32).eval();
  const Tensor m = m0 * 0.9f + g;
  const Tensor x = m * 2.f;
  kiln::detail::Node* both[] = {m.node().get(), x.node().get()};
  const auto merged = kiln::detail::schedule(both);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].stored.size(), 1u);
  FusionPolicy separate;
  separate.multi_output = false;
  EXPECT_EQ(kiln::detail::schedule(both, separate).size(), 2u);
}

}  // namespace
