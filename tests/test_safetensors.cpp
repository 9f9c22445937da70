// safetensors files: kiln's writer and reader agree on every dtype kiln has, a file PyTorch wrote
// loads into the kiln model of the same architecture and gives PyTorch's outputs, and damaged or
// mismatched files fail with the file and the tensor named, leaving the model as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"
#include "kiln/nn.hpp"
#include "kiln/safetensors.hpp"

namespace {

using kiln_test::error_of;
using kiln_test::TempFile;

namespace nn = kiln::nn;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
using Vf = std::vector<float>;

const std::string kData = KILN_TEST_DATA_DIR;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file of `header` (JSON) and `data` bytes.
std::string file_of(const std::string& header, const std::string& data) {
  const std::uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

void expect_error(const kiln::Error& e, ErrorCode code, const std::vector<std::string>& words) {
  EXPECT_EQ(e.code(), code) << e.what();
  for (const std::string& w : words)
    EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << "'" << w << "' in: " << e.what();
}

nn::Sequential torch_architecture() {
  return nn::Sequential(nn::Conv2d(1, 3, 3), nn::BatchNorm2d(3), nn::ReLU(), nn::Flatten(),
                        nn::Linear(3 * 4 * 4, 5));
}

std::vector<std::vector<float>> values_of(const nn::Module& m) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(p.value().to_vector<float>());
  for (const auto& [name, p] : m.named_buffers()) out.push_back(p.value().to_vector<float>());
  return out;
}

TEST(Safetensors, EveryKilnDtypeRoundTripsWithItsMetadata) {
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"weights", Tensor::from(Vf{1.5f, -2.f, 3.25f, 0.f, 7.f, -8.5f}, {2, 3})},
      {"scale", Tensor::from(std::vector<double>{0.125}, {})},
      {"ids", Tensor::from(std::vector<std::int32_t>{-1, 2, 3}, {3})},
      {"steps", Tensor::from(std::vector<std::int64_t>{std::int64_t{1} << 40}, {1})},
      {"none yet", kiln::zeros({0, 4})},
      {"caf\xc3\xa9 \"quoted\"\n", kiln::ones({2})}};
  TempFile f("roundtrip.safetensors");
  kiln::save_safetensors(f.path, tensors, {{"format", "pt"}, {"note", "a \"b\" \\ c"}});
  const kiln::Safetensors loaded = kiln::load_safetensors(f.path);
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, want] = tensors[i];
    EXPECT_EQ(loaded.tensors[i].first, name);
    const Tensor& got = loaded.at(name);
    EXPECT_EQ(got.dtype(), want.dtype()) << name;
    EXPECT_EQ(got.shape(), want.shape()) << name;
    EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>()) << name;
  }
  EXPECT_EQ(loaded.metadata, (std::vector<std::pair<std::string, std::string>>{
                                 {"format", "pt"}, {"note", "a \"b\" \\ c"}}));
  // The data begins 8-byte aligned, as the reference writer has it.
  std::ifstream in(f.path, std::ios::binary);
  std::uint64_t header = 0;
  in.read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(header % 8, 0u);
  // Names must be distinct and not the metadata's.
  expect_error(error_of([&] {
                 kiln::save_safetensors(f.path, {{"a", kiln::ones({1})}, {"a", kiln::ones({1})}});
               }),
               ErrorCode::invalid_select, {"'a'", "twice"});
  expect_error(error_of([&] { (void)loaded.at("absent"); }), ErrorCode::invalid_select, {"absent"});
}

TEST(Safetensors, APyTorchModelLoadsAndGivesPyTorchsOutputs) {
  nn::manual_seed(3);
  nn::Sequential model = torch_architecture();
  model.eval();
  const std::string weights = kData + "/torch_model.safetensors";
  // PyTorch's BatchNorm keeps num_batches_tracked, which kiln does not: strict loading names it
  // and changes nothing.
  const auto before = values_of(model);
  expect_error(error_of([&] { nn::load_safetensors(model, weights); }),
               ErrorCode::incompatible_shapes, {weights, "1.num_batches_tracked", "strict"});
  EXPECT_EQ(values_of(model), before);
  nn::load_safetensors(model, weights, {.strict = false});
  const kiln::Safetensors io = kiln::load_safetensors(kData + "/torch_model_io.safetensors");
  const Vf got = model(io.at("input")).to_vector<float>();
  const Vf want = io.at("output").to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
}

TEST(Safetensors, AModelRoundTripsAndNamesCanBeMapped) {
  nn::manual_seed(4);
  nn::Sequential saved = torch_architecture();
  TempFile f("model.safetensors");
  nn::save_safetensors(saved, f.path);
  nn::manual_seed(5);
  nn::Sequential loaded = torch_architecture();
  ASSERT_NE(values_of(loaded), values_of(saved));
  nn::load_safetensors(loaded, f.path);
  EXPECT_EQ(values_of(loaded), values_of(saved));
  // A file whose names carry a prefix (a model saved as a member of a larger one).
  std::vector<std::pair<std::string, Tensor>> prefixed;
  for (const auto& [name, t] : kiln::load_safetensors(f.path).tensors)
    prefixed.emplace_back("backbone." + name, t);
  kiln::save_safetensors(f.path, prefixed);
  nn::manual_seed(6);
  nn::Sequential renamed = torch_architecture();
  expect_error(error_of([&] { nn::load_safetensors(renamed, f.path); }),
               ErrorCode::incompatible_shapes, {f.path, "'0.weight'", "not in the file"});
  nn::load_safetensors(renamed, f.path,
                       {.file_name = [](const std::string& n) { return "backbone." + n; }});
  EXPECT_EQ(values_of(renamed), values_of(saved));
}

TEST(Safetensors, AFileForAnotherModelChangesNothing) {
  nn::manual_seed(7);
  nn::Sequential model = torch_architecture();
  const auto before = values_of(model);
  TempFile f("other.safetensors");
  // Another width of the last layer.
  nn::save_safetensors(nn::Sequential(nn::Conv2d(1, 3, 3), nn::BatchNorm2d(3), nn::ReLU(),
                                      nn::Flatten(), nn::Linear(3 * 4 * 4, 6)),
                       f.path);
  expect_error(error_of([&] { nn::load_safetensors(model, f.path); }),
               ErrorCode::incompatible_shapes, {f.path, "'4.weight'", "[6,48]", "[5,48]"});
  // Another dtype.
  std::vector<std::pair<std::string, Tensor>> wide;
  for (const auto& [name, p] : model.named_parameters())
    wide.emplace_back(name, kiln::convert(p.value(), DType::f64));
  for (const auto& [name, p] : model.named_buffers()) wide.emplace_back(name, p.value());
  kiln::save_safetensors(f.path, wide);
  expect_error(error_of([&] { nn::load_safetensors(model, f.path); }), ErrorCode::wrong_type,
               {f.path, "'0.weight'", "f64", "f32"});
  EXPECT_EQ(values_of(model), before);
}

TEST(Safetensors, DamagedFilesAreClearErrors) {
  TempFile f("damaged.safetensors");
  const std::string four_floats(16, '\0');
  auto load_error = [&](const std::string& bytes) {
    write_bytes(f.path, bytes);
    return error_of([&] { (void)kiln::load_safetensors(f.path); });
  };
  const std::string good = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  ASSERT_EQ(load_error(file_of(good, four_floats)).code(), ErrorCode::none);
  expect_error(load_error("short"), ErrorCode::io_error, {f.path, "too short"});
  // A header length past the end of the file (a tiny file must not allocate what it claims).
  std::string huge(8, '\xff');
  expect_error(load_error(huge + "{}"), ErrorCode::io_error, {f.path, "header length"});
  expect_error(load_error(file_of(good, four_floats.substr(4))), ErrorCode::io_error,
               {f.path, "cover 16 bytes", "12"});
  expect_error(load_error(file_of(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})",
                                  four_floats.substr(4))),
               ErrorCode::io_error, {"'a'", "[2,2]", "16 bytes"});
  expect_error(load_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                  four_floats.substr(12))),
               ErrorCode::io_error, {"another tensor's bytes"});
  expect_error(load_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                  four_floats.substr(8))),
               ErrorCode::io_error, {"'a'", "hole"});
  expect_error(load_error(file_of(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
                                  four_floats.substr(12))),
               ErrorCode::wrong_type, {f.path, "'a'", "BF16"});
  expect_error(load_error(file_of(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})",
                                  four_floats.substr(12))),
               ErrorCode::io_error, {"unknown dtype 'Q4'"});
  expect_error(load_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                  R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                  four_floats.substr(8))),
               ErrorCode::io_error, {"duplicate key"});
  expect_error(load_error(file_of(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                                  four_floats.substr(12))),
               ErrorCode::io_error, {"'a'", "non-negative"});
  // A shape whose element count overflows 64 bits.
  expect_error(
      load_error(file_of(
          R"({"a":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})",
          four_floats.substr(8))),
      ErrorCode::io_error, {"'a'", "needs"});
  expect_error(load_error(file_of(std::string(40, '[') + std::string(40, ']'), "")),
               ErrorCode::io_error, {"not a JSON object"});
  expect_error(
      load_error(file_of("{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}", "")),
      ErrorCode::io_error, {"nested deeper"});
  expect_error(error_of([&] { (void)kiln::load_safetensors(kData); }), ErrorCode::io_error,
               {"is a directory"});
}

}  // namespace
