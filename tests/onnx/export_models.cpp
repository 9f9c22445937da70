// Writes ONNX models exported by kiln, each with the inputs it was run on and kiln's outputs
// (an .npz beside the .onnx): tests/onnx/check_onnx.py checks every model with onnx.checker and
// runs it in ONNX Runtime against kiln's outputs. Usage: export_models DIRECTORY
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"

namespace {

using kiln::DType;
using kiln::Tensor;
namespace nn = kiln::nn;

struct Case {
  std::vector<Tensor> placeholders;
  std::vector<Tensor> feeds;  // values for the placeholders
  std::vector<std::pair<std::string, Tensor>> outputs;
};

void write_case(const std::filesystem::path& dir, const std::string& name, const Case& c) {
  std::vector<Tensor> outputs;
  kiln::OnnxExportOptions options;
  for (const auto& [output_name, t] : c.outputs) {
    outputs.push_back(t);
    options.output_names.push_back(output_name);
  }
  kiln::save_onnx((dir / (name + ".onnx")).string(), c.placeholders, outputs, options);
  const std::vector<Tensor> values = kiln::compile(c.placeholders, outputs)(c.feeds);
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (std::size_t i = 0; i < c.feeds.size(); ++i)
    arrays.emplace_back("in." + c.placeholders[i].name(), c.feeds[i]);
  for (std::size_t i = 0; i < values.size(); ++i)
    arrays.emplace_back("out." + options.output_names[i], values[i]);
  kiln::data::save_npz((dir / (name + ".npz")).string(), arrays);
  std::printf("wrote %s (%zu outputs)\n", name.c_str(), outputs.size());
}

Tensor normal(kiln::Shape shape, std::uint64_t seed) {
  return kiln::random_normal(std::move(shape), seed, DType::f32).eval();
}

Case mlp() {
  nn::Sequential model(nn::Linear(8, 16), nn::GELU(), nn::Linear(16, 16), nn::SiLU(),
                       nn::LayerNorm({16}), nn::Dropout(0.3), nn::Tanh(), nn::Linear(16, 4),
                       nn::Softmax(1));
  model.eval();
  const Tensor x = kiln::placeholder({5, 8}, DType::f32, "x");
  return {{x}, {normal({5, 8}, 1)}, {{"probabilities", model(x)}}};
}

Case cnn() {
  nn::Conv2d conv1(3, 6, 3, 1, 1);
  nn::BatchNorm2d norm(6);
  nn::Conv2d conv2(6, 6, 3, 1, 1, true, /*dilation=*/2, /*groups=*/3);
  nn::ConvTranspose2d up(6, 4, 3, /*stride=*/2, /*padding=*/1, /*output_padding=*/1);
  nn::Linear head(64, 5);
  // Running statistics from one batch in training mode, then evaluation.
  norm(conv1(normal({4, 3, 12, 12}, 2))).eval();
  norm.eval();
  const Tensor x = kiln::placeholder({2, 3, 12, 12}, DType::f32, "image");
  Tensor h = nn::MaxPool2d(2)(kiln::relu(norm(conv1(x))));
  h = nn::LeakyReLU(0.1)(nn::AvgPool2d(2, 2, 1)(conv2(h)));
  h = nn::AdaptiveAvgPool2d(4)(nn::Sigmoid()(up(h)));
  const Tensor logits = head(nn::Flatten()(h));
  return {
      {x},
      {normal({2, 3, 12, 12}, 3)},
      {{"log_probabilities", kiln::log_softmax(logits, 1)}, {"label", kiln::argmax(logits, 1)}}};
}

Case transformer() {
  nn::Embedding embed(20, 16);
  nn::TransformerEncoderLayerOptions o;
  o.dim_feedforward = 32;
  o.activation = "gelu";
  o.batch_first = true;
  nn::TransformerEncoderLayer first(16, 4, o);
  o.norm_first = true;
  o.activation = "relu";
  nn::TransformerEncoderLayer second(16, 4, o);
  nn::Linear head(16, 20);
  first.eval();
  second.eval();
  const Tensor tokens = kiln::placeholder({2, 7}, DType::i64, "tokens");
  nn::AttentionMasks causal;
  causal.is_causal = true;
  const Tensor h = second.forward(first.forward(embed(tokens), causal), causal);
  const Tensor logits = head(h);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 14; ++i) ids.push_back((i * 7 + 3) % 20);
  return {{tokens},
          {Tensor::from(ids, {2, 7})},
          {{"logits", logits}, {"next", kiln::argmax(logits, -1)}}};
}

Case recurrent() {
  nn::RecurrentOptions o;
  o.num_layers = 2;
  o.batch_first = true;
  nn::LSTM lstm(4, 6, o);
  o.num_layers = 1;
  nn::GRU gru(6, 5, o);
  const Tensor x = kiln::placeholder({3, 5, 4}, DType::f32, "sequence");
  const Tensor h0 = kiln::placeholder({1, 3, 5}, DType::f32, "h0");
  const nn::GRUOutput out = gru.forward(lstm(x), h0);
  return {{x, h0},
          {normal({3, 5, 4}, 4), normal({1, 3, 5}, 5)},
          {{"output", out.output}, {"h", out.h}}};
}

// Every elementwise op, reduction, view and indexing op the exporter maps, on floats.
Case float_ops() {
  const Tensor a = kiln::placeholder({3, 4}, DType::f32, "a");
  const Tensor b = kiln::placeholder({3, 4}, DType::f32, "b");
  const Tensor m = kiln::placeholder({2, 3, 3}, DType::f32, "m");
  const Tensor d = kiln::placeholder({2, 5}, DType::f64, "d");
  const Tensor unit = kiln::abs(a) * 0.4f + 0.1f;  // in (0, 1)
  std::vector<std::pair<std::string, Tensor>> out = {
      {"neg", -a},
      {"abs", kiln::abs(a)},
      {"square", kiln::square(a)},
      {"relu", kiln::relu(a)},
      {"sign", kiln::sign(a)},
      {"sqrt", kiln::sqrt(unit)},
      {"exp", kiln::exp(a)},
      {"expm1", kiln::expm1(a)},
      {"log", kiln::log(unit)},
      {"log2", kiln::log2(unit)},
      {"log10", kiln::log10(unit)},
      {"log1p", kiln::log1p(unit)},
      {"sin", kiln::sin(a)},
      {"cos", kiln::cos(a)},
      {"tan", kiln::tan(unit)},
      {"asin", kiln::asin(unit)},
      {"acos", kiln::acos(unit)},
      {"atan", kiln::atan(a)},
      {"sinh", kiln::sinh(a)},
      {"cosh", kiln::cosh(a)},
      {"tanh", kiln::tanh(a)},
      {"asinh", kiln::asinh(a)},
      {"acosh", kiln::acosh(unit + 1.0f)},
      {"atanh", kiln::atanh(unit)},
      {"reciprocal", kiln::reciprocal(unit)},
      {"sigmoid", kiln::sigmoid(a)},
      {"erf", kiln::erf(a)},
      {"softplus", kiln::softplus(a)},
      {"add", a + b},
      {"sub", a - b},
      {"mul", a * b},
      {"div", a / b},
      {"pow", kiln::pow(unit, b)},
      {"minimum", kiln::minimum(a, b)},
      {"maximum", kiln::maximum(a, b)},
      {"less", kiln::less(a, b)},
      {"greater", kiln::greater(a, b)},
      {"equal", kiln::equal(a, kiln::minimum(a, b))},
      {"less_equal", kiln::less_equal(a, b)},
      {"greater_equal", kiln::greater_equal(a, b)},
      {"not_equal", kiln::not_equal(a, b)},
      {"where", kiln::where(kiln::less(a, b), a, b)},
      {"sum", kiln::sum(a, {1})},
      {"prod", kiln::prod(a, {0})},
      {"min", kiln::min(a, {1})},
      {"max", kiln::max(a, {0, 1})},
      {"mean", kiln::mean(a, {0})},
      {"argmax", kiln::argmax(a, 1)},
      {"argmin", kiln::argmin(a, 0)},
      {"argmax_all", kiln::argmax(a)},
      {"cumsum", kiln::cumsum(a, 1)},
      {"argsort", kiln::argsort(a, 1, true)},
      {"argsort_up", kiln::argsort(b, 0)},
      {"softmax", kiln::softmax(a, 0)},
      {"log_softmax", kiln::log_softmax(b, 1)},
      {"flip", kiln::flip(a, {0, 1})},
      {"every_other", kiln::slice(a, {0, 3}, {3, 0}, {2, -2})},
      {"pad", kiln::pad(a, {1, 0}, {2, 1}, 1.5)},
      {"transpose", kiln::transpose(a, 0, 1)},
      {"reshape", kiln::reshape(a, {2, 6})},
      {"empty", kiln::reshape(kiln::slice(a, {1, 0}, {1, 4}), {0, 2, 2})},
      {"broadcast", a + kiln::slice(b, {0, 0}, {1, 4})},
      {"inverse_broadcast", a * kiln::sum(b, {1}).inverse_broadcast()},
      {"concat", kiln::concat({a, b, a}, 0)},
      {"matmul", kiln::matmul(kiln::reshape(a, {1, 3, 4}), kiln::transpose(b, 0, 1))},
      {"det", kiln::det(m)},
      {"gather",
       kiln::gather(a, 1, Tensor::from(std::vector<std::int64_t>{3, 0, 1, 1, 2, 0}, {3, 2}))},
      {"scatter_add",
       kiln::scatter_add(a, 0, Tensor::from(std::vector<std::int32_t>{2, 0, 2, 1}, {1, 4}), b)},
      {"index_select", kiln::index_select(b, 1, Tensor::from(std::vector<std::int64_t>{2, 2, 0}))},
      {"cumsum_f64", kiln::cumsum(d, 1)},
      {"exp_f64", kiln::exp(d)}};
  return {{a, b, m, d},
          {normal({3, 4}, 6), normal({3, 4}, 7), normal({2, 3, 3}, 8),
           kiln::random_normal({2, 5}, 9, DType::f64).eval()},
          out};
}

// kiln's integer rules (division by zero and by -1, negative powers, conversions that saturate)
// and integer reductions, views and pooling.
Case integer_ops() {
  const Tensor i = kiln::placeholder({3, 4}, DType::i32, "i");
  const Tensor j = kiln::placeholder({3, 4}, DType::i32, "j");
  const Tensor k = kiln::placeholder({1, 1, 4, 4}, DType::i32, "k");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor specials =
      Tensor::from(std::vector<float>{nan, inf, -inf, 3e9f, -3e9f, 2.7f, -2.7f, 0.0f, -0.0f});
  std::vector<std::pair<std::string, Tensor>> out = {
      {"div", i / j},
      {"pow", kiln::pow(i, j)},
      {"neg", -i},
      {"abs", kiln::abs(j)},
      {"relu", kiln::relu(j)},
      {"square", kiln::square(i)},
      {"sign", kiln::sign(j)},
      {"even", kiln::even(j)},
      {"sum", kiln::sum(i, {0})},
      {"prod", kiln::prod(j, {1})},
      {"min", kiln::min(j, {1})},
      {"max", kiln::max(i, {0})},
      {"mean", kiln::mean(j, {1})},
      {"argmax", kiln::argmax(j, 0)},
      {"cumsum", kiln::cumsum(i, 0)},
      {"matmul", kiln::matmul(i, kiln::transpose(j, 0, 1))},
      {"less", kiln::less(i, j)},
      {"sqrt", kiln::sqrt(kiln::abs(i))},
      {"max_pool", kiln::max_pool2d(k, {2, 2})},
      {"to_i32", kiln::convert(specials, DType::i32)},
      {"to_i64", kiln::convert(specials * 1e10f, DType::i64)},
      {"sign_specials", kiln::sign(specials)},
      {"to_f64", kiln::convert(i, DType::f64)}};
  std::vector<std::int32_t> iv{7, -7, 9, 0, 2147483647, -2147483647 - 1, 5, -3, 4, 1, -1, 6};
  std::vector<std::int32_t> jv{2, 2, 0, 3, -1, -1, -2, -1, 3, -4, -3, 0};
  std::vector<std::int32_t> kv;
  for (int v = 0; v < 16; ++v) kv.push_back((v * 5) % 11 - 5);
  return {{i, j, k},
          {Tensor::from(iv, {3, 4}), Tensor::from(jv, {3, 4}), Tensor::from(kv, {1, 1, 4, 4})},
          out};
}

// bool masks: comparisons, the logical ops, any/all, masks in where and arithmetic, conversions.
Case bool_ops() {
  const Tensor x = kiln::placeholder({3, 4}, DType::f32, "x");
  const Tensor m = kiln::placeholder({3, 4}, DType::boolean, "m");
  const Tensor positive = x > 0;
  std::vector<std::pair<std::string, Tensor>> out = {
      {"and", positive & m},
      {"or", (x < -1) | m},
      {"xor", positive ^ m},
      {"not", !m},
      {"any", kiln::any(m, 1)},
      {"all", kiln::all(positive, 0)},
      {"count", kiln::sum(m, {1})},
      {"where", kiln::where(m, x, x * 2)},
      {"masked", kiln::masked_fill(x, positive, 0.0)},
      {"mask_as_f32", kiln::convert(m, DType::f32) + x},
      {"to_bool", kiln::convert(x * 0.25f, DType::boolean)},
      {"mask_order", kiln::less(m, positive)},
      {"mask_argmax", kiln::argmax(m, 1)}};
  std::vector<float> xv;
  for (int v = 0; v < 12; ++v) xv.push_back(static_cast<float>(v % 5) - 2.0f);
  std::vector<bool> mv;
  for (int v = 0; v < 12; ++v) mv.push_back(v % 3 != 1);
  return {{x, m}, {Tensor::from(xv, {3, 4}), Tensor::from(mv, {3, 4})}, out};
}

}  // namespace

// A model exported with an open batch size (built at batches 2, 3 and 5), run on a batch of 7:
// ONNX Runtime must take a batch the export never saw.
void write_open_batch_case(const std::filesystem::path& dir, const std::string& name,
                           const std::vector<kiln::OnnxInput>& inputs,
                           const kiln::OnnxModelBuilder& build, const std::vector<Tensor>& feeds,
                           const std::vector<std::string>& output_names) {
  kiln::OnnxExportOptions options;
  options.output_names = output_names;
  kiln::save_onnx((dir / (name + ".onnx")).string(), inputs, build, options);
  std::vector<Tensor> placeholders;
  for (const kiln::OnnxInput& in : inputs) {
    kiln::Shape shape = in.shape;
    shape.insert(shape.begin(), feeds[placeholders.size()].size(0));
    placeholders.push_back(kiln::placeholder(shape, in.dtype, in.name));
  }
  const std::vector<Tensor> values = kiln::compile(placeholders, build(placeholders))(feeds);
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (std::size_t i = 0; i < feeds.size(); ++i) arrays.emplace_back("in." + inputs[i].name, feeds[i]);
  for (std::size_t i = 0; i < values.size(); ++i)
    arrays.emplace_back("out." + output_names[i], values[i]);
  kiln::data::save_npz((dir / (name + ".npz")).string(), arrays);
  std::printf("wrote %s (open batch, run on %lld)\n", name.c_str(),
              static_cast<long long>(feeds[0].size(0)));
}

void open_batch_cases(const std::filesystem::path& dir) {
  // A classifier of token sequences: embedding, attention (whose head reshapes grow with the
  // batch), a mean over the sequence and a head.
  auto embed = std::make_shared<nn::Embedding>(20, 16);
  nn::TransformerEncoderLayerOptions o;
  o.dim_feedforward = 32;
  o.batch_first = true;
  auto encoder = std::make_shared<nn::TransformerEncoder>(16, 4, 2, o, true);
  auto head = std::make_shared<nn::Linear>(16, 3);
  encoder->eval();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 7 * 6; ++i) ids.push_back((i * 5 + 1) % 20);
  write_open_batch_case(
      dir, "open_batch_transformer", {{"tokens", {6}, DType::i64}},
      [=](const std::vector<Tensor>& in) {
        const Tensor logits = (*head)(kiln::mean((*encoder)((*embed)(in[0])), {1}));
        return std::vector<Tensor>{logits, kiln::argmax(logits, 1)};
      },
      {Tensor::from(ids, {7, 6})}, {"logits", "label"});
  // A CNN whose flatten keeps the batch.
  auto conv = std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1);
  auto linear = std::make_shared<nn::Linear>(4 * 4 * 4, 10);
  write_open_batch_case(
      dir, "open_batch_cnn", {{"image", {1, 8, 8}}},
      [=](const std::vector<Tensor>& in) {
        const Tensor h = nn::MaxPool2d(2)(kiln::relu((*conv)(in[0])));
        return std::vector<Tensor>{kiln::softmax((*linear)(nn::Flatten()(h)), 1)};
      },
      {normal({7, 1, 8, 8}, 6)}, {"probabilities"});
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  try {
    write_case(dir, "mlp", mlp());
    write_case(dir, "cnn", cnn());
    write_case(dir, "transformer", transformer());
    write_case(dir, "recurrent", recurrent());
    write_case(dir, "float_ops", float_ops());
    write_case(dir, "integer_ops", integer_ops());
    write_case(dir, "bool_ops", bool_ops());
    open_batch_cases(dir);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "export_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
