// kiln::compile: a compiled function gives the bits the graph gives when built anew over the same
// values, binds new arguments without scheduling again, applies its updates after computing every
// value from the old states, rejects bad arguments clearly, and never changes the user's graph.
// Its rewrite passes change nothing in the results, bit for bit, on random graphs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "exec/schedule_cache.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using Vf = std::vector<float>;

std::vector<std::uint32_t> bits(const Tensor& t) {
  std::vector<std::uint32_t> out;
  for (float v : t.to_vector<float>()) out.push_back(std::bit_cast<std::uint32_t>(v));
  return out;
}

Tensor random_tensor(const Shape& shape, std::mt19937& gen) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Vf v(static_cast<std::size_t>(kiln_test::numel_of(shape)));
  for (float& x : v) x = dist(gen);
  return Tensor::from(v, shape);
}

// The graph the tests compile, over any two tensors x [4,5] and y [5].
Tensor model(const Tensor& x, const Tensor& y, const Tensor& w) {
  const Tensor h = kiln::exp(kiln::sin(x) * y + 1.0f) / 2.0f;
  return kiln::sum(kiln::matmul(h, w), {1}) + kiln::max(x);
}

TEST(Function, GivesTheBitsOfTheGraphBuiltAnew) {
  std::mt19937 gen(7);
  const Tensor w = random_tensor({5, 3}, gen).eval();
  const Tensor x = kiln::placeholder({4, 5}, DType::f32, "x");
  const Tensor y = kiln::placeholder({5}, DType::f32, "y");
  const kiln::Function f = kiln::compile({x, y}, {model(x, y, w), kiln::relu(x)});
  ASSERT_EQ(f.num_inputs(), 2u);
  ASSERT_EQ(f.num_outputs(), 2u);
  for (int call = 0; call < 5; ++call) {
    const Tensor xv = random_tensor({4, 5}, gen);
    const Tensor yv = random_tensor({5}, gen);
    const std::vector<Tensor> out = f(xv, yv);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].shape(), (Shape{4}));
    EXPECT_EQ(bits(out[0]), bits(model(xv, yv, w))) << "call " << call;
    EXPECT_EQ(bits(out[1]), bits(kiln::relu(xv))) << "call " << call;
  }
}

TEST(Function, ACallNeitherBuildsNorSchedulesAgain) {
  const Tensor x = kiln::placeholder({8}, DType::f32, "x");
  const kiln::Function f = kiln::compile({x}, {kiln::sum(kiln::exp(x) * 3.0f), x * x});
  const Tensor first = Tensor::from(Vf{1, 2, 3, 4, 5, 6, 7, 8});
  (void)f(first);  // the first call schedules
  std::vector<Tensor> args;
  for (int i = 0; i < 10; ++i) args.push_back(kiln::full({8}, static_cast<float>(i)).eval());
  const auto before = kiln::detail::schedule_cache_counts();
  for (int i = 0; i < 10; ++i) {
    const std::vector<Tensor> out = f(args[static_cast<std::size_t>(i)]);
    EXPECT_FLOAT_EQ(out[0].item<float>(), 8.0f * 3.0f * std::exp(static_cast<float>(i)));
  }
  const auto after = kiln::detail::schedule_cache_counts();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);
}

TEST(Function, EarlierResultsStayAsTheyWere) {
  const Tensor x = kiln::placeholder({3});
  const kiln::Function f = kiln::compile({x}, {x + 1.0f});
  const Tensor a = f(Tensor::from(Vf{1, 2, 3}))[0];
  const Tensor b = f(Tensor::from(Vf{10, 20, 30}))[0];
  EXPECT_EQ(a.to_vector<float>(), (Vf{2, 3, 4}));
  EXPECT_EQ(b.to_vector<float>(), (Vf{11, 21, 31}));
}

TEST(Function, TheUsersGraphIsNotChanged) {
  const Tensor x = kiln::placeholder({2, 2}, DType::f32, "x");
  const Tensor c = kiln::constant(Tensor::from(Vf{1, 1, 1, 1}, {2, 2}));
  const Tensor out = kiln::neg(kiln::neg(x * c)) + kiln::sum(c * 2.0f) + kiln::transpose(x, 0, 1);
  const std::string before = kiln::debug_print(out);
  const kiln::Function f = kiln::compile({x}, {out});
  EXPECT_FALSE(f.rewrites().empty());
  (void)f(Tensor::from(Vf{1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(kiln::debug_print(out), before);
  EXPECT_FALSE(out.is_evaluated());
  // Evaluating the user's graph still needs the placeholder's value.
  EXPECT_EQ(kiln_test::code_of([&] { out.eval(); }), ErrorCode::invalid_select);
}

TEST(Function, BadArgumentsAreClearErrors) {
  const Tensor x = kiln::placeholder({2, 3}, DType::f32, "x");
  const kiln::Function f = kiln::compile({x}, {x * 2.0f});
  const Tensor good = kiln::zeros({2, 3});
  EXPECT_EQ(kiln_test::code_of([&] { (void)f(good, good); }), ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] { (void)f(std::vector<Tensor>{}); }), ErrorCode::invalid_select);
  const kiln::Error shape = kiln_test::error_of([&] { (void)f(kiln::zeros({3, 2})); });
  EXPECT_EQ(shape.code(), ErrorCode::incompatible_shapes);
  EXPECT_NE(std::string(shape.what()).find("[3,2]"), std::string::npos) << shape.what();
  EXPECT_NE(std::string(shape.what()).find("\"x\""), std::string::npos) << shape.what();
  EXPECT_EQ(kiln_test::code_of([&] {
              (void)f(kiln::zeros({2, 3}, DType::f64));
            }),
            ErrorCode::wrong_type);
  EXPECT_EQ(kiln_test::code_of([&] { (void)f(Tensor()); }), ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([] { (void)kiln::Function()({}); }), ErrorCode::invalid_select);
  // After the errors the function still works.
  EXPECT_EQ(f(kiln::ones({2, 3}))[0].to_vector<float>(), (Vf{2, 2, 2, 2, 2, 2}));
}

TEST(Function, BadCompilationsAreClearErrors) {
  const Tensor x = kiln::placeholder({2}, DType::f32, "x");
  const Tensor y = kiln::placeholder({2}, DType::f32, "y");
  const kiln::Error missing = kiln_test::error_of([&] { (void)kiln::compile({x}, {x + y}); });
  EXPECT_EQ(missing.code(), ErrorCode::invalid_select);
  EXPECT_NE(std::string(missing.what()).find("\"y\""), std::string::npos) << missing.what();
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::compile({x + 1.0f}, {x}); }),
            ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] {
              (void)kiln::compile({x, x}, {x});
            }),
            ErrorCode::invalid_select);
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::compile({x}, {}); }), ErrorCode::invalid_select);
  const Tensor s = kiln::zeros({2}).eval();
  auto with_update = [&](Tensor state, Tensor value) {
    kiln::CompileOptions options;
    options.updates.push_back({std::move(state), std::move(value)});
    return kiln_test::code_of([&] { (void)kiln::compile({x}, {x}, options); });
  };
  EXPECT_EQ(with_update(s + 1.0f, x), ErrorCode::invalid_select);  // not a leaf
  EXPECT_EQ(with_update(x, x), ErrorCode::invalid_select);         // a placeholder
  EXPECT_EQ(with_update(s, kiln::zeros({3})), ErrorCode::incompatible_shapes);
  EXPECT_EQ(with_update(s, kiln::zeros({2}, DType::f64)), ErrorCode::wrong_type);
  kiln::CompileOptions twice;
  twice.updates = {{s, x}, {s, x * 2.0f}};
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::compile({x}, {x}, twice); }),
            ErrorCode::invalid_select);
}

TEST(Function, UpdatesComeAfterEveryValueIsComputed) {
  const Tensor count = Tensor::from(Vf{0.0f}).eval();
  kiln::CompileOptions options;
  options.updates = {{count, count + 1.0f}};
  const kiln::Function tick = kiln::compile({}, {count * 2.0f}, options);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(tick({})[0].item<float>(), 2.0f * static_cast<float>(i));
  EXPECT_EQ(count.item<float>(), 3.0f);  // every handle to the state sees the new value

  // Two states updated from each other: both values come from the states before the call.
  const Tensor a = Tensor::from(Vf{1.0f}).eval();
  const Tensor b = Tensor::from(Vf{2.0f}).eval();
  kiln::CompileOptions swap;
  swap.updates = {{a, b}, {b, a + b}};
  const kiln::Function step = kiln::compile({}, {a}, swap);
  EXPECT_EQ(step({})[0].item<float>(), 1.0f);
  EXPECT_EQ(a.item<float>(), 2.0f);
  EXPECT_EQ(b.item<float>(), 3.0f);
  (void)step({});
  EXPECT_EQ(a.item<float>(), 3.0f);
  EXPECT_EQ(b.item<float>(), 5.0f);

  // Another function over the same state reads its current value at each call.
  const kiln::Function read = kiln::compile({}, {count + 0.0f});
  EXPECT_EQ(read({})[0].item<float>(), 3.0f);
  (void)tick({});
  EXPECT_EQ(read({})[0].item<float>(), 4.0f);
}

// The MLP step of kiln_bench as a compiled function with updates, against the same step built
// anew each time: the parameters agree bit for bit after every step.
TEST(Function, ACompiledTrainingStepMatchesTheRebuiltOne) {
  std::mt19937 gen(3);
  std::vector<Tensor> init = {random_tensor({6, 8}, gen), random_tensor({8}, gen),
                              random_tensor({8, 3}, gen), random_tensor({3}, gen)};
  const Tensor labels = Tensor::from(std::vector<std::int64_t>{0, 1, 2, 1}, {4});
  auto loss_of = [&](const Tensor& x, const std::vector<Tensor>& p) {
    kiln::GradientContext context;
    const Tensor hidden = kiln::relu(kiln::matmul(x, p[0]) + p[1]);
    return kiln::cross_entropy(kiln::matmul(hidden, p[2]) + p[3], labels);
  };
  std::vector<Tensor> params, eager;
  for (const Tensor& t : init) {
    params.push_back(t.clone().eval().watch());
    eager.push_back(t.clone().eval().watch());
  }
  const Tensor x = kiln::placeholder({4, 6}, DType::f32, "x");
  const Tensor loss = loss_of(x, params);
  const std::vector<Tensor> grads = kiln::gradients(loss, params);
  kiln::CompileOptions options;
  for (std::size_t i = 0; i < params.size(); ++i)
    options.updates.push_back({params[i], params[i] - grads[i] * 0.1f});
  const kiln::Function step = kiln::compile({x}, {loss}, options);
  for (int s = 0; s < 4; ++s) {
    const Tensor batch = random_tensor({4, 6}, gen);
    const Tensor compiled_loss = step(batch)[0];
    const Tensor eager_loss = loss_of(batch, eager);
    const std::vector<Tensor> g = kiln::gradients(eager_loss, eager);
    std::vector<Tensor> next;
    for (std::size_t i = 0; i < eager.size(); ++i) next.push_back(eager[i] - g[i] * 0.1f);
    kiln::eval_all(next);
    EXPECT_EQ(bits(compiled_loss), bits(eager_loss)) << "step " << s;
    for (std::size_t i = 0; i < eager.size(); ++i) {
      eager[i] = next[i].detach().watch();
      EXPECT_EQ(bits(params[i]), bits(eager[i])) << "step " << s << " parameter " << i;
    }
  }
}

TEST(Function, RunsOnTheExecutorItIsGiven) {
  const Tensor x = kiln::placeholder({3});
  kiln::CompileOptions options;
  options.executor = kiln::reference_executor();
  const kiln::Function f = kiln::compile({x}, {kiln::exp(x) * 2.0f}, options);
  const Tensor v = Tensor::from(Vf{0.5f, -1.0f, 3.0f});
  EXPECT_EQ(bits(f(v)[0]), bits((kiln::exp(v) * 2.0f).eval(*kiln::reference_executor())));
}

TEST(Function, CallsFromSeveralThreadsTakeTurns) {
  const Tensor x = kiln::placeholder({64});
  const kiln::Function f = kiln::compile({x}, {kiln::sum(x * x)});
  std::vector<std::thread> threads;
  std::vector<float> got(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i)
        got[static_cast<std::size_t>(t)] =
            f(kiln::full({64}, static_cast<float>(t)))[0].item<float>();
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[static_cast<std::size_t>(t)], 64.0f * t * t);
}

// ---- passes ----------------------------------------------------------------------------------

kiln::Function compiled(const std::vector<Tensor>& in, const Tensor& out, bool passes) {
  kiln::CompileOptions options;
  options.passes = passes;
  return kiln::compile(in, {out}, options);
}

TEST(GraphPasses, EachRewriteHappensAndSaysSo) {
  const Tensor x = kiln::placeholder({4}, DType::f32, "x");
  const Tensor i = kiln::placeholder({4}, DType::i32, "i");
  const Tensor c = kiln::constant(Tensor::from(Vf{1, 2, 3, 4}));
  struct Case {
    const char* what;
    Tensor out;
  };
  const std::vector<Case> cases = {
      {"simplify", x * 1.0f},
      {"simplify", x / 1.0f},
      {"simplify", x - 0.0f},
      {"simplify", kiln::neg(kiln::neg(x))},
      {"simplify", kiln::convert(x, DType::f32) + kiln::exp(x)},
      {"simplify", (i + 0) * 2},
      {"simplify", kiln::transpose(kiln::transpose(kiln::reshape(x, {2, 2}), 0, 1), 0, 1) + 1.0f},
      {"merge", kiln::exp(x) + kiln::exp(x)},
      {"fold", x + kiln::exp(c) * 2.0f},
  };
  for (const Case& k : cases) {
    const kiln::Function on = compiled({x, i}, k.out, true);
    const kiln::Function off = compiled({x, i}, k.out, false);
    bool found = false;
    for (const std::string& line : on.rewrites()) found = found || line.rfind(k.what, 0) == 0;
    EXPECT_TRUE(found) << k.what << ": " << kiln::debug_print(k.out);
    EXPECT_LT(on.num_nodes(), off.num_nodes()) << kiln::debug_print(k.out);
    EXPECT_TRUE(off.rewrites().empty());
  }
}

TEST(GraphPasses, AFoldThatGivesOneLetsTheProductGo) {
  const Tensor x = kiln::placeholder({4}, DType::f32, "x");
  const Tensor zero = kiln::constant(kiln::zeros({4}));
  const kiln::Function f = compiled({x}, x * kiln::exp(zero), true);
  const std::vector<std::string>& log = f.rewrites();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].rfind("fold: exp", 0), 0u) << log[0];
  EXPECT_EQ(log[1].rfind("simplify: mul", 0), 0u) << log[1];
  EXPECT_EQ(f.num_nodes(), 1u);  // x alone
  const Tensor v = Tensor::from(Vf{-0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f});
  EXPECT_EQ(bits(f(v)[0]), bits(v));
}

TEST(GraphPasses, InexactRewritesAreNotMade) {
  const Tensor x = kiln::placeholder({4}, DType::f32, "x");
  const Tensor v = Tensor::from(Vf{-0.0f, std::numeric_limits<float>::quiet_NaN(),
                                   std::numeric_limits<float>::infinity(), 2.0f});
  for (const Tensor& out : {x + 0.0f, x * 0.0f, x - x, x - (-0.0f)}) {
    const kiln::Function f = compiled({x}, out, true);
    EXPECT_TRUE(f.rewrites().empty()) << kiln::debug_print(out);
    EXPECT_EQ(bits(f(v)[0]), bits(compiled({x}, out, false)(v)[0]));
  }
}

// Random graphs over a placeholder, constants and special values, with every rewrite in reach:
// the results with and without passes agree bit for bit.
TEST(GraphPasses, RandomGraphsGiveTheSameBitsWithAndWithoutPasses) {
  std::mt19937 gen(11);
  const Tensor x = kiln::placeholder({3, 4}, DType::f32, "x");
  const Tensor c = kiln::constant(Tensor::from(
      Vf{1, -0.0f, 0, 2, std::numeric_limits<float>::infinity(), -3, 0.5f, 1, 1, 7, -1, 4},
      {3, 4}));
  const Tensor input =
      Tensor::from(Vf{-0.0f, 0.0f, std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity(), 1, -1, 2.5f, 1e-30f, -7, 3, 100},
                   {3, 4});
  int rewritten = 0;
  for (int g = 0; g < 60; ++g) {
    std::vector<Tensor> pool = {x, c, x, c * 1.0f};
    for (int step = 0; step < 8; ++step) {
      auto pick = [&] {
        return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(gen)];
      };
      const Tensor a = pick();
      const Tensor b = pick();
      Tensor next;
      switch (std::uniform_int_distribution<int>(0, 11)(gen)) {
        case 0: next = a + b; break;
        case 1: next = a * b; break;
        case 2: next = a - b; break;
        case 3: next = a / b; break;
        case 4: next = kiln::neg(kiln::neg(a)); break;
        case 5: next = a * 1.0f; break;
        case 6: next = a - 0.0f; break;
        case 7: next = a + 0.0f; break;
        case 8: next = kiln::transpose(kiln::transpose(a, 0, 1), 0, 1); break;
        case 9: next = kiln::exp(a) + kiln::exp(a); break;
        case 10: next = kiln::convert(kiln::convert(a, DType::f64), DType::f32); break;
        default: next = kiln::sum(a, {1}, true) * b; break;
      }
      pool.push_back(next);
    }
    const Tensor out = pool.back() + pool[pool.size() - 2];
    const kiln::Function on = compiled({x}, out, true);
    const kiln::Function off = compiled({x}, out, false);
    rewritten += on.rewrites().empty() ? 0 : 1;
    EXPECT_EQ(bits(on(input)[0]), bits(off(input)[0])) << kiln::debug_print(out);
  }
  EXPECT_GT(rewritten, 30);
}

}  // namespace
