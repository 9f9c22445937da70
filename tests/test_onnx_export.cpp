// ONNX export: the model's structure read back with a small protobuf decoder, and the errors.
// That the models run in ONNX Runtime with kiln's values is checked by tests/onnx/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kiln/custom.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
using kiln_test::error_of;
using kiln_test::TempFile;

// The call throws kiln::Error with `code` and a message containing `words`.
#define EXPECT_KILN_ERROR(call, expected_code, words)                                     \
  do {                                                                           \
    const kiln::Error e = error_of([&] { (void)(call); });                       \
    EXPECT_EQ(e.code(), expected_code) << e.what();                                       \
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what(); \
  } while (0)

// One message's fields: field number -> raw values (varints as numbers, the rest as bytes).
struct Fields {
  std::multimap<int, std::uint64_t> numbers;
  std::multimap<int, std::string> bytes;

  std::vector<std::string> all(int field) const {
    std::vector<std::string> out;
    for (auto [it, end] = bytes.equal_range(field); it != end; ++it) out.push_back(it->second);
    return out;
  }
  std::string one(int field) const {
    const auto v = all(field);
    EXPECT_EQ(v.size(), 1u) << "field " << field;
    return v.empty() ? std::string() : v.front();
  }
  std::uint64_t number(int field) const {
    const auto it = numbers.find(field);
    EXPECT_NE(it, numbers.end()) << "field " << field;
    return it == numbers.end() ? 0 : it->second;
  }
};

std::uint64_t varint(const std::string& s, std::size_t& at) {
  std::uint64_t v = 0;
  for (int shift = 0; at < s.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(s[at++]);
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  ADD_FAILURE() << "truncated varint";
  return v;
}

Fields decode(const std::string& s) {
  Fields f;
  std::size_t at = 0;
  while (at < s.size()) {
    const std::uint64_t key = varint(s, at);
    const int field = static_cast<int>(key >> 3);
    switch (key & 7) {
      case 0: f.numbers.emplace(field, varint(s, at)); break;
      case 2: {
        const std::uint64_t n = varint(s, at);
        if (n > s.size() - at) {
          ADD_FAILURE() << "length past the end";
          return f;
        }
        f.bytes.emplace(field, s.substr(at, n));
        at += n;
        break;
      }
      case 5: at += 4; break;
      default: ADD_FAILURE() << "wire type " << (key & 7); return f;
    }
  }
  return f;
}

std::string model_bytes(const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                        const kiln::OnnxExportOptions& options = {}) {
  const std::vector<std::byte> b = kiln::serialize_onnx(in, out, options);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

std::vector<std::string> op_types(const Fields& graph) {
  std::vector<std::string> ops;
  for (const std::string& node : graph.all(1)) ops.push_back(decode(node).one(4));
  return ops;
}

TEST(OnnxExport, ModelHeaderInputsOutputsAndOps) {
  const Tensor x = kiln::placeholder({2, 3}, DType::f32, "x");
  const Fields model = decode(model_bytes({x}, {kiln::exp(x) + x}));
  EXPECT_EQ(model.number(1), 8u);   // ir_version
  EXPECT_EQ(model.one(2), "kiln");  // producer_name
  const Fields opset = decode(model.one(8));
  EXPECT_EQ(opset.number(2), 17u);
  const Fields graph = decode(model.one(7));
  EXPECT_EQ(op_types(graph), (std::vector<std::string>{"Exp", "Add", "Identity"}));
  ASSERT_EQ(graph.all(11).size(), 1u);
  EXPECT_EQ(decode(graph.one(11)).one(1), "x");
  EXPECT_EQ(decode(graph.one(12)).one(1), "output0");
  EXPECT_TRUE(graph.all(5).empty());  // no initializers
}

TEST(OnnxExport, WeightsAreInitializersWithTheirBytes) {
  const std::vector<float> w{1.5f, -2.0f, 0.25f, 4.0f, 8.0f, -1.0f};
  const Tensor weight = Tensor::from(w, {3, 2});
  const Tensor x = kiln::placeholder({4, 3}, DType::f32, "x");
  const Fields graph = decode(decode(model_bytes({x}, {kiln::matmul(x, weight)})).one(7));
  EXPECT_EQ(op_types(graph), (std::vector<std::string>{"MatMul", "Identity"}));
  const Fields init = decode(graph.one(5));
  EXPECT_EQ(init.number(2), 1u);  // FLOAT
  std::string raw(w.size() * sizeof(float), '\0');
  std::memcpy(raw.data(), w.data(), raw.size());
  EXPECT_EQ(init.one(9), raw);
  // dims, packed
  std::size_t at = 0;
  const std::string dims = init.one(1);
  EXPECT_EQ(varint(dims, at), 3u);
  EXPECT_EQ(varint(dims, at), 2u);
}

TEST(OnnxExport, NamesFromTheOptions) {
  const Tensor x = kiln::placeholder({2}, DType::f32);
  kiln::OnnxExportOptions o;
  o.input_names = {"features"};
  o.output_names = {"doubled", "squared"};
  o.graph_name = "tiny";
  const Fields graph = decode(decode(model_bytes({x}, {x * 2.0f, x * x}, o)).one(7));
  EXPECT_EQ(graph.one(2), "tiny");
  EXPECT_EQ(decode(graph.one(11)).one(1), "features");
  const auto outputs = graph.all(12);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(decode(outputs[0]).one(1), "doubled");
  EXPECT_EQ(decode(outputs[1]).one(1), "squared");
}

TEST(OnnxExport, InputsMustBeDistinctPlaceholders) {
  const Tensor x = kiln::placeholder({2}, DType::f32, "x");
  const Tensor data = Tensor::from(std::vector<float>{1, 2});
  EXPECT_KILN_ERROR(kiln::serialize_onnx({data}, {data + 1.0f}), ErrorCode::invalid_select,
                    "not a placeholder");
  EXPECT_KILN_ERROR(kiln::serialize_onnx({x, x}, {x + 1.0f}), ErrorCode::invalid_select,
                    "given twice");
  const Tensor y = kiln::placeholder({2}, DType::f32, "y");
  EXPECT_KILN_ERROR(kiln::serialize_onnx({x}, {x + y}), ErrorCode::invalid_select,
                    "placeholder 'y', which is not among the inputs");
  EXPECT_KILN_ERROR(kiln::serialize_onnx({x}, {}), ErrorCode::invalid_select, "no outputs");
  kiln::OnnxExportOptions clash;
  clash.output_names = {"x"};
  EXPECT_KILN_ERROR(kiln::serialize_onnx({x}, {x + 1.0f}, clash), ErrorCode::invalid_select,
                    "needs a name of its own");
}

TEST(OnnxExport, OpsWithoutAnOnnxFormNameTheOpAndShape) {
  const Tensor x = kiln::placeholder({2, 3}, DType::f32, "x");
  EXPECT_KILN_ERROR(kiln::serialize_onnx({x}, {kiln::cumprod(x, 1)}), ErrorCode::io_error,
                    "cumprod f32[2,3] has no ONNX form");
  EXPECT_KILN_ERROR(kiln::serialize_onnx({x}, {kiln::dropout(x, 0.5, 7)}), ErrorCode::io_error,
                    "random");
  const Tensor mapped = kiln::map_elements(x, [](double v) { return v * 2; });
  EXPECT_KILN_ERROR(kiln::serialize_onnx({x}, {mapped}), ErrorCode::io_error, "C++ callable");
}

TEST(OnnxExport, AFailedExportLeavesTheOldFile) {
  const TempFile file("export.onnx");
  const std::filesystem::path path = file.path;
  const Tensor x = kiln::placeholder({3}, DType::f32, "x");
  kiln::save_onnx(path.string(), {x}, {kiln::sigmoid(x)});
  const auto size = std::filesystem::file_size(path);
  EXPECT_GT(size, 0u);
  EXPECT_THROW(kiln::save_onnx(path.string(), {x}, {kiln::cumprod(x, 0)}), kiln::Error);
  EXPECT_EQ(std::filesystem::file_size(path), size);
  EXPECT_KILN_ERROR(kiln::save_onnx("/nonexistent-dir/m.onnx", {x}, {x + 1.0f}),
                    ErrorCode::io_error, "/nonexistent-dir/m.onnx");
}

TEST(OnnxExport, ModulesInEvalModeExport) {
  kiln::nn::Sequential model(kiln::nn::Linear(4, 8), kiln::nn::ReLU(), kiln::nn::Dropout(0.5),
                             kiln::nn::Linear(8, 2));
  const Tensor x = kiln::placeholder({1, 4}, DType::f32, "x");
  EXPECT_THROW(kiln::serialize_onnx({x}, {model(x)}), kiln::Error);  // dropout draws values
  model.eval();
  const Fields graph = decode(decode(model_bytes({x}, {model(x)})).one(7));
  int weights = 0;  // FLOAT initializers: two weights, two biases (the rest are shapes)
  for (const std::string& init : graph.all(5)) weights += decode(init).number(2) == 1;
  EXPECT_EQ(weights, 4);
  const auto ops = op_types(graph);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "MatMul"), 2);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Relu"), 1);
}

}  // namespace

namespace {

// The dimensions of a ValueInfoProto: a number, or the name of a symbolic dimension.
std::vector<std::string> dims_of(const std::string& value_info) {
  const Fields tensor = decode(decode(decode(value_info).one(2)).one(1));
  std::vector<std::string> dims;
  for (const std::string& d : decode(tensor.one(2)).all(1)) {
    const Fields dim = decode(d);
    dims.push_back(dim.bytes.count(2) ? dim.one(2) : std::to_string(dim.number(1)));
  }
  return dims;
}

TEST(OnnxExport, AnOpenBatchIsSymbolicAndShapesFollowIt) {
  const auto bytes = kiln::serialize_onnx(
      {{"x", {3, 4}}}, [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{kiln::reshape(in[0], {-1, 4}).sum({1})};
      });
  const Fields graph = decode(decode(std::string(reinterpret_cast<const char*>(bytes.data()),
                                                 bytes.size()))
                                  .one(7));
  EXPECT_EQ(dims_of(graph.one(11)), (std::vector<std::string>{"batch", "3", "4"}));
  // The output [batch * 3] varies without being the batch: an open dimension of its own.
  EXPECT_EQ(dims_of(graph.one(12)), (std::vector<std::string>{"output0_dim0"}));
  // The reshape's shape is computed from the input's batch, first.
  const std::vector<std::string> ops = op_types(graph);
  EXPECT_EQ(ops.front(), "Shape");
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Reshape"), ops.end());
}

TEST(OnnxExport, AnOpenBatchRefusesGraphsThatDependOnItOtherwise) {
  const std::vector<kiln::OnnxInput> x = {{"x", {3}}};
  EXPECT_KILN_ERROR(kiln::serialize_onnx(x, [](const std::vector<Tensor>& in) {
                      const std::vector<float> ones(static_cast<std::size_t>(in[0].numel()), 1);
                      return std::vector<Tensor>{in[0] + Tensor::from(ones, in[0].shape())};
                    }),
                    ErrorCode::io_error, "a constant's shape [2,3] varies with the batch size");
  EXPECT_KILN_ERROR(kiln::serialize_onnx({}, [](const std::vector<Tensor>& in) { return in; }),
                    ErrorCode::invalid_select, "needs inputs");
  EXPECT_KILN_ERROR(kiln::serialize_onnx(x, nullptr), ErrorCode::invalid_select,
                    "no function builds the model");
  kiln::OnnxExportOptions named;
  named.input_names = {"y"};
  EXPECT_KILN_ERROR(
      kiln::serialize_onnx(x, [](const std::vector<Tensor>& in) { return in; }, named),
      ErrorCode::invalid_select, "named by their OnnxInput");
}

}  // namespace
