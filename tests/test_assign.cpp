// kiln::assign, the in-place update that keeps value semantics: the result takes over the
// target's memory exactly when nobody can tell (no handle, no graph outside the evaluation, own
// memory of the right type and size), every executor computes the same values either way, and a
// graph kept for gradients that needs the overwritten values again fails with a clear error.
#include <gtest/gtest.h>

#include <vector>

#include "exec/fusion.hpp"
#include "exec/kernel_ir.hpp"
#include "exec/schedule_cache.hpp"
#include "graph/node.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
using Vf = std::vector<float>;

// The buffer holding a tensor's values (internal), to see whether an update was in place.
const void* storage_of(const Tensor& t) { return t.node()->result.get(); }

// The reference backend declines in-place offers (it always computes into fresh memory): in-place
// checks apply to the others.
bool computes_in_place() { return kiln::current_executor()->name() != "reference"; }

Tensor evaluated(const Vf& values) { return (Tensor::from(values) + 0.0f).eval(); }

TEST(Assign, TakesTheTargetsMemoryWhenNothingElseSeesIt) {
  Tensor w = evaluated({1.f, 2.f, 3.f});
  const void* before = storage_of(w);
  w = kiln::assign(w, w * 2.0f - 1.0f);
  w.eval();
  EXPECT_EQ(w.to_vector<float>(), (Vf{1.f, 3.f, 5.f}));
  if (computes_in_place()) {
    EXPECT_EQ(storage_of(w), before);
  }
  // Again, from the result of the first update.
  before = storage_of(w);
  w = kiln::assign(w, w + 1.0f);
  w.eval();
  EXPECT_EQ(w.to_vector<float>(), (Vf{2.f, 4.f, 6.f}));
  if (computes_in_place()) {
    EXPECT_EQ(storage_of(w), before);
  }
}

TEST(Assign, AHandleToTheTargetKeepsItsValues) {
  Tensor w = evaluated({1.f, 2.f, 3.f});
  const Tensor kept = w;
  w = kiln::assign(w, w * 10.0f).eval();
  EXPECT_NE(storage_of(w), storage_of(kept));
  EXPECT_EQ(kept.to_vector<float>(), (Vf{1.f, 2.f, 3.f}));
  EXPECT_EQ(w.to_vector<float>(), (Vf{10.f, 20.f, 30.f}));
}

TEST(Assign, AGraphOutsideTheEvaluationStillReadsTheOldValues) {
  Tensor w = evaluated({1.f, 2.f, 3.f});
  const Tensor later = w - 1.0f;  // lazy, built on the old value; no handle to w itself below
  w = kiln::assign(w, w * 10.0f);
  w.eval();
  EXPECT_EQ(later.to_vector<float>(), (Vf{0.f, 1.f, 2.f}));
  EXPECT_EQ(w.to_vector<float>(), (Vf{10.f, 20.f, 30.f}));
}

TEST(Assign, ARequestedTargetIsNotOverwritten) {
  Tensor w = evaluated({1.f, 2.f});
  Tensor next = kiln::assign(w, w + 1.0f);
  kiln::eval_all({w, next});
  EXPECT_EQ(w.to_vector<float>(), (Vf{1.f, 2.f}));
  EXPECT_EQ(next.to_vector<float>(), (Vf{2.f, 3.f}));
}

TEST(Assign, BorrowedMemoryIsNeverWritten) {
  Vf user = {1.f, 2.f, 3.f};
  Tensor w = Tensor::from_blob(user.data(), {3}, DType::f32);
  w = kiln::assign(w, w + 5.0f);
  w.eval();
  EXPECT_EQ(user, (Vf{1.f, 2.f, 3.f}));
  EXPECT_EQ(w.to_vector<float>(), (Vf{6.f, 7.f, 8.f}));
}

TEST(Assign, FollowsTheBinaryOpRulesForTypeAndShape) {
  // An f64 value promotes the result: the f32 target's memory does not fit it.
  Tensor w = evaluated({1.f, 2.f});
  const void* before = storage_of(w);
  Tensor wide = kiln::assign(w, Tensor::from(std::vector<double>{0.5, 0.25})).eval();
  EXPECT_EQ(wide.dtype(), DType::f64);
  EXPECT_EQ(wide.to_vector<double>(), (std::vector<double>{0.5, 0.25}));
  EXPECT_NE(storage_of(wide), before);
  // A scalar value fills the target's shape.
  Tensor filled = kiln::assign(evaluated({4.f, 5.f, 6.f}), 7.0f);
  EXPECT_EQ(filled.to_vector<float>(), (Vf{7.f, 7.f, 7.f}));
  // Shapes that do not broadcast are refused like any binary op's.
  EXPECT_EQ(kiln_test::code_of([] {
              (void)kiln::assign(Tensor::from(Vf{1.f, 2.f}), Tensor::from(Vf{1.f, 2.f, 3.f}));
            }),
            ErrorCode::incompatible_shapes);
}

TEST(Assign, GradientsFlowToTheValueOnly) {
  Tensor target = evaluated({1.f, 2.f});
  Tensor value = evaluated({3.f, 4.f});
  Tensor loss;
  {
    kiln::GradientContext ctx;
    target.watch();
    value.watch();
    loss = kiln::sum(kiln::assign(target, value * value));
  }
  const auto grads = kiln::gradients(loss, {target, value});
  EXPECT_EQ(grads[0].to_vector<float>(), (Vf{0.f, 0.f}));
  EXPECT_EQ(grads[1].to_vector<float>(), (Vf{6.f, 8.f}));
}

TEST(Assign, AKeptGraphThatNeedsTheOverwrittenValuesFailsClearly) {
  // loss = sum(w * u) is kept for gradients; evaluating it together with w's update lets the
  // update take w's memory (every reader of w is part of that evaluation). The gradient with
  // respect to u needs the old w again: an error, not the new values.
  Tensor w = evaluated({1.f, 2.f});
  Tensor u = evaluated({3.f, 4.f});
  Tensor loss;
  {
    kiln::GradientContext ctx;
    u.watch();
    loss = kiln::sum(w * u);
  }
  const void* before = storage_of(w);
  w = kiln::assign(w, w + 1.0f);
  kiln::eval_all({loss, w});
  EXPECT_EQ(loss.item<float>(), 11.f);
  EXPECT_EQ(w.to_vector<float>(), (Vf{2.f, 3.f}));
  if (!computes_in_place()) return;  // the reference backend copies: the old values remain
  EXPECT_EQ(storage_of(w), before);
  try {
    (void)kiln::gradients(loss, {u})[0].to_vector<float>();
    ADD_FAILURE() << "differentiating through the overwritten value did not fail";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::illegal_derive);
    EXPECT_NE(std::string(e.what()).find("updated in place"), std::string::npos) << e.what();
  }
}

// The steps of the one fused kernel that computes `targets` (loads excluded).
int fused_steps(std::vector<Tensor> targets) {
  std::vector<kiln::detail::Node*> nodes;
  for (const Tensor& t : targets) nodes.push_back(t.node().get());
  kiln::detail::GraphStructure structure;
  structure.build(nodes);
  const auto kernels = kiln::detail::schedule(nodes, {});
  EXPECT_EQ(kernels.size(), 1u) << kiln::detail::describe(kernels);
  kiln::detail::KernelIr ir;
  kiln::detail::lower_kernel(
      kernels.back().body, kernels.back().stored, structure,
      [](const kiln::detail::Node&, const kiln::detail::Node*) {
        return kiln::detail::LoadFacts{};
      },
      ir);
  int steps = 0;
  for (const auto& ins : ir.code) steps += ins.load < 0;
  return steps;
}

TEST(Assign, AnUpdateComputedInTheKernelIsStoredWithoutACopy) {
  const Tensor w = evaluated({1.f, 2.f, 3.f});
  const Tensor g = evaluated({4.f, 5.f, 6.f});
  const Tensor update = w - g * 0.5f;
  EXPECT_EQ(fused_steps({kiln::assign(w, update)}), 2);  // mul, sub: the sub writes the result
  // The update wanted as well: its step stores it, and the assign copies it once more.
  const Tensor next = kiln::assign(w, update);
  EXPECT_EQ(fused_steps({next, update}), 3);
  // A value read from memory has no step to take over: the assign copies it.
  EXPECT_EQ(fused_steps({kiln::assign(w, g)}), 1);
}

TEST(Assign, FusedIntoLongerChainsGivesTheSameValues) {
  Tensor w = evaluated({1.f, 2.f, 3.f});
  const Tensor g = evaluated({4.f, 5.f, 6.f});
  // The assign read by a later op of the same kernel.
  EXPECT_EQ((kiln::assign(w, w * 2.0f) + 1.0f).to_vector<float>(), (Vf{3.f, 5.f, 7.f}));
  // The assign's value read again after the assign.
  const Tensor doubled = g * 2.0f;
  EXPECT_EQ((kiln::assign(w, doubled) * doubled).to_vector<float>(), (Vf{64.f, 100.f, 144.f}));
  // The update and the assign both wanted.
  const Tensor update = w - g;
  Tensor next = kiln::assign(w, update);
  kiln::eval_all({next, update});
  EXPECT_EQ(next.to_vector<float>(), (Vf{-3.f, -3.f, -3.f}));
  EXPECT_EQ(update.to_vector<float>(), (Vf{-3.f, -3.f, -3.f}));
  // Two updates of one kernel, the first's result read by the second (an optimiser's moment
  // and the parameter computed from it).
  Tensor m = evaluated({0.f, 1.f, 2.f});
  const Tensor m_next = kiln::assign(m, m * 0.5f + g);
  w = kiln::assign(w, w - m_next * 0.25f);
  kiln::eval_all({w, m_next});
  EXPECT_EQ(m_next.to_vector<float>(), (Vf{4.f, 5.5f, 7.f}));
  EXPECT_EQ(w.to_vector<float>(), (Vf{0.f, 0.625f, 1.25f}));
}

}  // namespace
