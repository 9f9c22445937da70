// safetensors files: kiln's writer and reader agree on every dtype kiln has, a file PyTorch wrote
// loads into the kiln model of the same architecture and gives PyTorch's outputs, and damaged or
// mismatched files fail with the file and the tensor named, leaving the model as it was.
#include <gtest/gtest.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"
#include "kiln/nn.hpp"
#include "kiln/safetensors.hpp"
#include "graph/narrow_floats.hpp"

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

// The narrower dtypes of the format are widened as they load, exactly: every value of each is a
// value of kiln's f32, i32 or i64.
TEST(Safetensors, NarrowerDtypesAreWidenedExactly) {
  auto bytes_of = [](const std::vector<unsigned>& values, std::size_t size) {
    std::string out;
    for (unsigned v : values)
      for (std::size_t b = 0; b < size; ++b) out += static_cast<char>((v >> (8 * b)) & 0xFF);
    return out;
  };
  struct Case {
    const char* dtype;
    std::size_t size;
    std::vector<unsigned> stored;
    DType kiln;
    std::vector<double> want;  // NaN: a NaN of the stored sign
  };
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      // 1, -2, 65504 (largest), 2^-14 (smallest normal), 2^-24 (smallest subnormal), -0, inf, NaN
      {"F16", 2, {0x3C00, 0xC000, 0x7BFF, 0x0400, 0x0001, 0x8000, 0x7C00, 0xFE01}, DType::f16,
       {1, -2, 65504, 0x1p-14, 0x1p-24, -0.0, inf, -nan}},
      // 1, -2.5, 1 + 2^-7, the largest finite (3.3895e38), 2^-133 (subnormal), -inf, NaN
      {"BF16", 2, {0x3F80, 0xC020, 0x3F81, 0x7F7F, 0x0001, 0xFF80, 0x7FC1}, DType::bf16,
       {1, -2.5, 1 + 0x1p-7, 0x1.FEp127, 0x1p-133, -inf, nan}},
      // 1, 57344 (largest), 2^-16 (smallest subnormal), -inf, NaN
      {"F8_E5M2", 1, {0x3C, 0x7B, 0x01, 0xFC, 0x7E}, DType::f32, {1, 57344, 0x1p-16, -inf, nan}},
      // 1, -448 (largest), 2^-9 (smallest subnormal), 0.875 * 2^-6 (largest subnormal), NaN
      {"F8_E4M3", 1, {0x38, 0xFE, 0x01, 0x07, 0x7F}, DType::f32,
       {1, -448, 0x1p-9, 0.875 * 0x1p-6, nan}},
      {"I8", 1, {0x80, 0x7F, 0xFF}, DType::i8, {-128, 127, -1}},
      {"U8", 1, {0xFF, 0x00}, DType::u8, {255, 0}},
      {"BOOL", 1, {0x01, 0x00, 0x02}, DType::boolean, {1, 0, 1}},
      {"I16", 2, {0x8000, 0x7FFF}, DType::i16, {-32768, 32767}},
      {"U16", 2, {0xFFFF}, DType::i32, {65535}},
      {"U32", 4, {0xFFFFFFFFu, 7}, DType::i64, {4294967295.0, 7}},
  };
  for (const Case& c : cases) {
    const std::string data = bytes_of(c.stored, c.size);
    const std::string header = std::string(R"({"t":{"dtype":")") + c.dtype +
                               R"(","shape":[)" + std::to_string(c.stored.size()) +
                               R"(],"data_offsets":[0,)" + std::to_string(data.size()) + "]}}";
    const std::string file = file_of(header, data);
    const kiln::Safetensors st = kiln::parse_safetensors(
        {reinterpret_cast<const std::byte*>(file.data()), file.size()}, c.dtype);
    const Tensor& t = st.at("t");
    EXPECT_EQ(t.dtype(), c.kiln) << c.dtype;
    const std::vector<double> got = t.to_vector<double>();
    ASSERT_EQ(got.size(), c.want.size()) << c.dtype;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(c.want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << c.dtype << " " << i;
        EXPECT_EQ(std::signbit(got[i]), std::signbit(c.want[i])) << c.dtype << " " << i;
      } else {
        EXPECT_EQ(got[i], c.want[i]) << c.dtype << " " << i;
        EXPECT_EQ(std::signbit(got[i]), std::signbit(c.want[i])) << c.dtype << " " << i;
      }
    }
  }
}

// Every half, bfloat16 and 8-bit float widens to the f32 with the same value (checked against
// the double arithmetic of its fields).
TEST(Safetensors, EveryNarrowFloatBitPatternWidensToItsValue) {
  for (unsigned bits = 0; bits < 0x100; ++bits) {
    const float e4m3 = kiln::detail::f8_e4m3_to_f32(static_cast<std::uint8_t>(bits));
    const int exponent = (bits >> 3) & 0xF, fraction = bits & 0x7;
    const double sign = (bits & 0x80) ? -1 : 1;
    EXPECT_EQ(std::signbit(e4m3), sign < 0) << bits;
    if (exponent == 15 && fraction == 7) {
      EXPECT_TRUE(std::isnan(e4m3)) << bits;
    } else {
      EXPECT_EQ(static_cast<double>(e4m3),
                sign * (exponent == 0 ? std::ldexp(fraction, -9)
                                      : std::ldexp(fraction + 8, exponent - 10)))
          << bits;
    }
    EXPECT_EQ(std::bit_cast<std::uint32_t>(kiln::detail::f8_e5m2_to_f32(
                  static_cast<std::uint8_t>(bits))),
              std::bit_cast<std::uint32_t>(kiln::detail::f16_to_f32(
                  static_cast<std::uint16_t>(bits << 8))))
        << bits;
  }
  for (unsigned bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const int exponent = (bits >> 10) & 0x1F, fraction = bits & 0x3FF;
    const double sign = (bits & 0x8000) ? -1 : 1;
    const float f16 = kiln::detail::f16_to_f32(h);
    if (exponent == 31) {
      EXPECT_EQ(std::isnan(f16), fraction != 0) << bits;
      EXPECT_EQ(std::signbit(f16), sign < 0) << bits;
    } else {
      const double want = sign * (exponent == 0 ? std::ldexp(fraction, -24)
                                                : std::ldexp(fraction + 1024, exponent - 25));
      ASSERT_EQ(static_cast<double>(f16), want) << bits;
      ASSERT_EQ(std::signbit(f16), sign < 0) << bits;
    }
    const float bf = kiln::detail::bf16_to_f32(h);
    const int bexp = (bits >> 7) & 0xFF, bfrac = bits & 0x7F;
    if (bexp == 255) {
      EXPECT_EQ(std::isnan(bf), bfrac != 0) << bits;
    } else {
      const double want = sign * (bexp == 0 ? std::ldexp(bfrac, -133)
                                            : std::ldexp(bfrac + 128, bexp - 134));
      ASSERT_EQ(static_cast<double>(bf), want) << bits;
    }
  }
}

// A model saved in bfloat16 (as Hugging Face checkpoints often are) loads into kiln's f32 model.
TEST(Safetensors, ABfloat16CheckpointLoadsIntoAnF32Model) {
  // weight [[0.5, -1.25], [3, 0]], bias [1, -0.0078125]: bfloat16 values, stored big half first.
  auto bf16 = [](std::initializer_list<float> values) {
    std::string out;
    for (float v : values) {
      const auto bits = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16);
      out += static_cast<char>(bits & 0xFF);
      out += static_cast<char>(bits >> 8);
    }
    return out;
  };
  const std::string file =
      file_of(R"({"bias":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},)"
              R"("weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[4,12]}})",
              bf16({1.f, -0.0078125f}) + bf16({0.5f, -1.25f, 3.f, 0.f}));
  TempFile f("bf16.safetensors");
  write_bytes(f.path, file);
  nn::Linear layer(2, 2);
  nn::load_safetensors(layer, f.path);
  const Tensor y = layer(Tensor::from(Vf{2.f, 4.f}, {1, 2}));
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.to_vector<float>(), (Vf{0.5f * 2 - 1.25f * 4 + 1, 3.f * 2 - 0.0078125f}));
}

// Narrowing to f16 and bf16 rounds to nearest, ties to even, in one step from f64 (never through
// f32, which would round twice): checked against the CPU's own conversion where it has one
// (F16C), and against the usual integer formula for bfloat16, over a sweep of f32 bit patterns
// and every midpoint between neighbouring halves.
#if defined(__x86_64__)
__attribute__((target("f16c"))) std::uint16_t f16c_nearest(float x) {
  return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
bool cpu_has_f16c() { return __builtin_cpu_supports("f16c"); }
#else
std::uint16_t f16c_nearest(float) { return 0; }
bool cpu_has_f16c() { return false; }
#endif
std::uint16_t bf16_by_formula(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

TEST(Safetensors, NarrowingRoundsToNearestEven) {
  using kiln::detail::bf16_nearest;
  using kiln::detail::f16_nearest;
  using kiln::detail::f16_to_f32;
  std::vector<float> inputs;
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 4099)  // a prime step
    inputs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
  for (unsigned h = 0; h < 0x7BFF; ++h) {  // each midpoint between neighbouring halves, and its
    const float lo = f16_to_f32(static_cast<std::uint16_t>(h));  // neighbouring f32s
    const float mid = static_cast<float>(
        (static_cast<double>(lo) + f16_to_f32(static_cast<std::uint16_t>(h + 1))) / 2);
    for (float m : {mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e9f)})
      inputs.insert(inputs.end(), {m, -m});
  }
  const bool has_f16c = cpu_has_f16c();
  for (float x : inputs) {
    if (std::isnan(x)) {
      EXPECT_EQ(f16_nearest(x) & 0x7E00, 0x7E00);
      EXPECT_TRUE(std::isnan(kiln::detail::bf16_to_f32(bf16_nearest(x))));
      continue;
    }
    if (has_f16c) {
      ASSERT_EQ(f16_nearest(x), f16c_nearest(x)) << std::hexfloat << x;
    }
    ASSERT_EQ(bf16_nearest(x), bf16_by_formula(x)) << std::hexfloat << x;
  }
  if (!has_f16c) std::cout << "[ note ] no F16C on this CPU: f16 checked by the cases below only\n";
  // Ties to even, overflow, subnormals.
  EXPECT_EQ(f16_nearest(1 + 0x1p-11), 0x3C00);      // halfway between 1 and 1 + 2^-10: even
  EXPECT_EQ(f16_nearest(1 + 3 * 0x1p-11), 0x3C02);  // halfway up from 1 + 2^-10: even
  EXPECT_EQ(f16_nearest(65519.99), 0x7BFF);
  EXPECT_EQ(f16_nearest(65520), 0x7C00);  // IEEE: rounds to infinity
  EXPECT_EQ(f16_nearest(0x1p-25), 0x0000);      // half the smallest subnormal: to even (zero)
  EXPECT_EQ(f16_nearest(0x1.8p-25), 0x0001);
  EXPECT_EQ(f16_nearest(-0.0), 0x8000);
  // From f64 in one step: just above a midpoint rounds up, though as an f32 it is the midpoint.
  const double above = 1 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(static_cast<double>(static_cast<float>(above)), 1 + 0x1p-11);
  EXPECT_EQ(f16_nearest(above), 0x3C01);
  EXPECT_EQ(bf16_nearest(1 + 0x1p-8 + 0x1p-40), 0x3F81);
}

// Saved as f16 or bf16 and loaded back: the rounded values; integers as they are; a value past
// f16's range is an error naming it, and the file is not written.
TEST(Safetensors, TensorsSavedInHalfPrecisionLoadRounded) {
  const Tensor w = Tensor::from(std::vector<double>{1.0, 1 + 0x1p-11 + 0x1p-40, -3.14159, 1e-9});
  const Tensor ids = Tensor::from(std::vector<std::int32_t>{7, -7});
  TempFile f("half.safetensors");
  for (auto floats : {kiln::StoredFloats::f16, kiln::StoredFloats::bf16}) {
    kiln::save_safetensors(f.path, {{"w", w}, {"ids", ids}}, {}, floats);
    const kiln::Safetensors st = kiln::load_safetensors(f.path);
    const std::vector<double> in = w.to_vector<double>();
    std::vector<double> want;
    for (double x : in)
      want.push_back(floats == kiln::StoredFloats::f16
                         ? kiln::detail::f16_to_f32(kiln::detail::f16_nearest(x))
                         : kiln::detail::bf16_to_f32(kiln::detail::bf16_nearest(x)));
    EXPECT_EQ(st.at("w").dtype(),
              floats == kiln::StoredFloats::f16 ? DType::f16 : DType::bf16);
    EXPECT_EQ(st.at("w").to_vector<double>(), want);
    EXPECT_EQ(st.at("ids").to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, -7}));
    EXPECT_EQ(std::filesystem::file_size(f.path) % 2, 0u);
  }
  EXPECT_EQ(kiln::load_safetensors(f.path).at("w").to_vector<float>()[0], 1.f);
  const auto before = std::filesystem::file_size(f.path);
  expect_error(error_of([&] {
                 kiln::save_safetensors(f.path, {{"big", Tensor::from(Vf{1.f, 70000.f})}}, {},
                                        kiln::StoredFloats::f16);
               }),
               ErrorCode::wrong_type, {"'big'", "70000", "element 1", "F16"});
  EXPECT_EQ(std::filesystem::file_size(f.path), before) << "the old file stays";
  // A model round trip in bfloat16.
  nn::Linear layer(3, 2);
  nn::save_safetensors(layer, f.path, kiln::StoredFloats::bf16);
  nn::Linear copy(3, 2);
  nn::load_safetensors(copy, f.path);
  const std::vector<float> original = layer.weight().value().to_vector<float>();
  const std::vector<float> loaded = copy.weight().value().to_vector<float>();
  for (std::size_t i = 0; i < original.size(); ++i)
    EXPECT_EQ(loaded[i], kiln::detail::bf16_to_f32(kiln::detail::bf16_nearest(original[i])));
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
  // A U64 value past what kiln's i64 holds is refused, not wrapped.
  std::string big(16, '\xff');
  big[8] = '\x07';
  for (int i = 9; i < 16; ++i) big[static_cast<std::size_t>(i)] = '\0';
  expect_error(load_error(file_of(R"({"a":{"dtype":"U64","shape":[2],"data_offsets":[0,16]}})",
                                  big)),
               ErrorCode::wrong_type, {f.path, "'a'", "U64", "18446744073709551615", "element 0"});
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
