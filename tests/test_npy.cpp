// NumPy .npy and .npz files: files numpy.save, numpy.savez and numpy.savez_compressed wrote (every
// dtype kiln reads, both byte orders, Fortran order, scalars and empty arrays) load with their
// values converted exactly; kiln's own files round-trip and numpy reads them (checked where
// Debian's python3-numpy is installed); damaged files and dtypes kiln lacks are clear errors naming
// the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln_test::error_of;
using kiln_test::TempFile;

using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
namespace data = kiln::data;

const std::string kData = KILN_TEST_DATA_DIR;

Tensor fixture(const std::string& name) { return data::load_npy(kData + "/" + name + ".npy"); }

TEST(Npy, FilesNumpyWroteLoadExactly) {
  const Tensor f4 = fixture("f4_2x3");
  EXPECT_EQ(f4.dtype(), DType::f32);
  EXPECT_EQ(f4.shape(), (kiln::Shape{2, 3}));
  EXPECT_EQ(f4.to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1, 1.25f}));
  const Tensor f8 = fixture("f8_big_endian");
  EXPECT_EQ(f8.dtype(), DType::f64);
  EXPECT_EQ(f8.to_vector<double>(), (std::vector<double>{1.5, -2.25, 1e300}));
  const Tensor scalar = fixture("i8_scalar");
  EXPECT_EQ(scalar.dtype(), DType::i64);
  EXPECT_EQ(scalar.shape(), kiln::Shape{});
  EXPECT_EQ(scalar.item<std::int64_t>(), -7);
  const Tensor u1 = fixture("u1_image");
  EXPECT_EQ(u1.dtype(), DType::u8);
  EXPECT_EQ(u1.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 128, 255}));
  EXPECT_EQ(fixture("i2_negative").dtype(), DType::i16);
  EXPECT_EQ(fixture("i2_negative").to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{-32768, -1, 32767}));
  EXPECT_EQ(fixture("b1").dtype(), kiln::DType::boolean);
  EXPECT_EQ(fixture("b1").to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(fixture("f2").dtype(), kiln::DType::f16);
  EXPECT_EQ(fixture("f2").to_vector<float>(), (std::vector<float>{0.5f, -2.f, 65504.f}));
  // Stored column-major: numpy's arange(6).reshape(3, 2) all the same.
  const Tensor fortran = fixture("f4_fortran_3x2");
  EXPECT_EQ(fortran.shape(), (kiln::Shape{3, 2}));
  EXPECT_EQ(fortran.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  const Tensor empty = fixture("empty_0x4");
  EXPECT_EQ(empty.shape(), (kiln::Shape{0, 4}));
  EXPECT_EQ(empty.dtype(), DType::i32);
}

TEST(Npy, ComplexArraysLoadAsC64AndC128) {
  const Tensor c8 = fixture("c8_complex");
  EXPECT_EQ(c8.dtype(), DType::c64);
  EXPECT_EQ(c8.to_vector<std::complex<float>>(), (std::vector<std::complex<float>>{{1, 2}}));
  // Big-endian: each part swapped on its own.
  const Tensor c16 = fixture("c16_big_endian");
  EXPECT_EQ(c16.dtype(), DType::c128);
  EXPECT_EQ(c16.to_vector<std::complex<double>>(),
            (std::vector<std::complex<double>>{{1.5, -0.25}, {-3e300, 1}}));
}

TEST(Npy, DtypesKilnLacksAreNamed) {
  const std::string datetime = kData + "/m8_datetime.npy";
  const kiln::Error c = error_of([&] { (void)data::load_npy(datetime); });
  EXPECT_EQ(c.code(), ErrorCode::wrong_type);
  EXPECT_NE(std::string(c.what()).find(datetime), std::string::npos) << c.what();
  EXPECT_NE(std::string(c.what()).find("<M8"), std::string::npos) << c.what();
  const kiln::Error u8 = error_of([&] { (void)fixture("u8_large"); });
  EXPECT_EQ(u8.code(), ErrorCode::wrong_type);
  EXPECT_NE(std::string(u8.what()).find("does not fit"), std::string::npos) << u8.what();
}

TEST(Npy, KilnsFilesRoundTripAndNumpyReadsThem) {
  TempFile f("roundtrip.npy");
  const std::vector<Tensor> tensors = {
      Tensor::from(std::vector<float>{1.5f, -2.f, 3.f, 4.f, 5.f, 6.f}, {3, 2}),
      Tensor::from(std::vector<double>{0.1}, {}),
      Tensor::from(std::vector<std::int32_t>{7, -8, 9}, {3}),
      Tensor::from(std::vector<std::int64_t>{std::int64_t{1} << 50}, {1, 1, 1}),
      kiln::zeros({2, 0})};
  for (const Tensor& t : tensors) {
    data::save_npy(f.path, t);
    const Tensor back = data::load_npy(f.path);
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.to_vector<double>(), t.to_vector<double>());
  }
  // numpy itself, where Debian's python3-numpy is installed.
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) {
    std::printf("[ numpy not installed: kiln's npy file not checked with numpy.load ]\n");
    return;
  }
  data::save_npy(f.path, tensors[0]);
  const std::string check = "/usr/bin/python3 -c \"import numpy as np, sys; a = np.load('" +
                            f.path +
                            "'); sys.exit(0 if a.dtype == np.float32 and a.shape == (3, 2) and "
                            "a[2, 1] == 6 and a[0, 0] == 1.5 else 1)\"";
  EXPECT_EQ(std::system(check.c_str()), 0) << "numpy.load disagreed with kiln's file";
}

TEST(Npy, DamagedFilesAreClearErrors) {
  TempFile f("damaged.npy");
  const std::vector<char> good = [&] {
    std::ifstream in(kData + "/f4_2x3.npy", std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  }();
  auto error_for = [&](const std::vector<char>& bytes) {
    std::ofstream(f.path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return error_of([&] { (void)data::load_npy(f.path); });
  };
  auto expect = [&](const kiln::Error& e, ErrorCode code, const std::string& words) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(f.path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  };
  ASSERT_EQ(error_for(good).code(), ErrorCode::none);
  expect(error_for({'N', 'U', 'M'}), ErrorCode::io_error, "magic");
  std::vector<char> truncated(good.begin(), good.end() - 4);
  expect(error_for(truncated), ErrorCode::io_error, "needs 24 bytes");
  std::vector<char> long_header = good;
  long_header[8] = '\xff';
  long_header[9] = '\xff';
  expect(error_for(long_header), ErrorCode::io_error, "runs past the end");
  std::vector<char> version = good;
  version[6] = 9;
  expect(error_for(version), ErrorCode::io_error, "version 9");
  auto with_header = [&](std::string header) {
    header.resize(118, ' ');
    std::vector<char> bytes(good.begin(), good.begin() + 10);
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.insert(bytes.end(), good.begin() + 128, good.end());
    return bytes;
  };
  expect(error_for(with_header("{'descr': '<f4', 'shape': (2, 3), }")), ErrorCode::io_error,
         "lacks");
  expect(error_for(with_header(
             "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 99999999999999999999), }")),
         ErrorCode::io_error, "too large");
  expect(
      error_for(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }")),
      ErrorCode::wrong_type, "structured");
  expect(error_for(with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }")),
         ErrorCode::io_error, "True or False");
}

void expect_fixture_arrays(const std::vector<std::pair<std::string, Tensor>>& arrays) {
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].first, "weights");
  EXPECT_EQ(arrays[0].second.shape(), (kiln::Shape{3, 4}));
  EXPECT_EQ(arrays[0].second.to_vector<float>()[11], 11.f);
  EXPECT_EQ(arrays[1].first, "labels");
  EXPECT_EQ(arrays[1].second.dtype(), DType::i64);
  EXPECT_EQ(arrays[1].second.to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 1, 2}));
}

TEST(Npz, ArchivesNumpyWroteLoad) {
  expect_fixture_arrays(data::load_npz(kData + "/stored.npz"));      // ZIP64 local headers
  expect_fixture_arrays(data::load_npz(kData + "/compressed.npz"));  // deflated
}

TEST(Npz, KilnsArchivesRoundTripAndNumpyReadsThem) {
  TempFile f("roundtrip.npz");
  const std::vector<std::pair<std::string, Tensor>> arrays = {
      {"x", Tensor::from(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3})},
      {"y", Tensor::from(std::vector<std::int32_t>{-1}, {})},
      {"z", kiln::zeros({0})}};
  for (const bool compressed : {false, true}) {
    data::save_npz(f.path, arrays, compressed);
    const auto back = data::load_npz(f.path);
    ASSERT_EQ(back.size(), arrays.size());
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      EXPECT_EQ(back[i].first, arrays[i].first);
      EXPECT_EQ(back[i].second.shape(), arrays[i].second.shape());
      EXPECT_EQ(back[i].second.to_vector<double>(), arrays[i].second.to_vector<double>());
    }
    if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) continue;
    const std::string check = "/usr/bin/python3 -c \"import numpy as np, sys; a = np.load('" +
                              f.path +
                              "'); sys.exit(0 if sorted(a.files) == ['x', 'y', 'z'] and "
                              "a['x'][1, 2] == 6 and a['y'] == -1 else 1)\"";
    EXPECT_EQ(std::system(check.c_str()), 0)
        << "numpy.load disagreed (compressed " << compressed << ")";
  }
  EXPECT_EQ(error_of([&] {
              data::save_npz(f.path, {{"a", kiln::ones({1})}, {"a", kiln::ones({1})}});
            }).code(),
            ErrorCode::invalid_select);
}

TEST(Npz, DamagedArchivesAreClearErrors) {
  const std::vector<char> good = [&] {
    std::ifstream in(kData + "/compressed.npz", std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  }();
  auto error_for = [&](const std::vector<char>& bytes) {
    return error_of([&] {
      (void)data::parse_npz(std::as_bytes(std::span(bytes.data(), bytes.size())), "test.npz");
    });
  };
  auto expect = [&](const kiln::Error& e, const std::string& words) {
    EXPECT_EQ(e.code(), ErrorCode::io_error) << e.what();
    EXPECT_NE(std::string(e.what()).find("test.npz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  };
  ASSERT_EQ(error_for(good).code(), ErrorCode::none);
  expect(error_for({'P', 'K'}), "too short");
  expect(error_for(std::vector<char>(100, 'x')), "no ZIP end record");
  // A flipped byte inside the first entry's deflated data: inflating or the CRC-32 fails.
  std::vector<char> flipped = good;
  flipped[80] = static_cast<char>(flipped[80] ^ 0x55);
  expect(error_for(flipped), "weights.npy");
  // The archive cut short: the directory points past the end.
  std::vector<char> cut(good.begin(), good.end() - 30);
  EXPECT_EQ(error_for(cut).code(), ErrorCode::io_error);
  // A ZIP of something else.
  TempFile f("other.npz");
  const std::string zip = "/usr/bin/python3 -c \"import zipfile; z = zipfile.ZipFile('" + f.path +
                          "', 'w'); z.writestr('notes.txt', 'hi'); z.close()\"";
  ASSERT_EQ(std::system(zip.c_str()), 0) << "python3's zipfile could not write " << f.path;
  const kiln::Error other = error_of([&] { (void)data::load_npz(f.path); });
  EXPECT_EQ(other.code(), ErrorCode::io_error);
  EXPECT_NE(std::string(other.what()).find(f.path + ": entry 'notes.txt' is not an .npy file"),
            std::string::npos)
      << other.what();
}

}  // namespace
