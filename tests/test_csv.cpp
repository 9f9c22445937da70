// Numeric CSV: headers found or given, quoting, line ends, empty fields, every value dtype, and
// clear errors naming the line and column.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/data.hpp"
#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln_test::error_of;

using kiln::DType;
using kiln::ErrorCode;
namespace data = kiln::data;

TEST(Csv, HeaderQuotesAndLineEnds) {
  const data::CsvTable t = data::parse_csv(
      "\"sepal, length\",width,\"say \"\"hi\"\"\"\r\n5.1,3.5,1\r\n\r\n4.9, 3 ,-2e-1\n+7,,inf\n");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"sepal, length", "width", "say \"hi\""}));
  EXPECT_EQ(t.values.shape(), (kiln::Shape{3, 3}));
  const std::vector<float> v = t.values.to_vector<float>();
  EXPECT_EQ(v[0], 5.1f);
  EXPECT_EQ(v[4], 3.f);
  EXPECT_EQ(v[5], -0.2f);
  EXPECT_EQ(v[6], 7.f);
  EXPECT_TRUE(std::isnan(v[7]));  // an empty field
  EXPECT_TRUE(std::isinf(v[8]));
}

TEST(Csv, NoHeaderOtherDelimitersAndTypes) {
  const data::CsvTable t = data::parse_csv("1;2\n3;4", {.delimiter = ';', .dtype = DType::i64});
  EXPECT_EQ(t.columns, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(t.values.dtype(), DType::i64);
  EXPECT_EQ(t.values.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2, 3, 4}));
  // A header of numbers, given as one.
  const data::CsvTable h = data::parse_csv(
      "10,20\n1.5,2.5\n", {.header = data::CsvOptions::Header::present, .dtype = DType::f64});
  EXPECT_EQ(h.columns, (std::vector<std::string>{"10", "20"}));
  EXPECT_EQ(h.values.to_vector<double>(), (std::vector<double>{1.5, 2.5}));
  // Only a header: no rows.
  EXPECT_EQ(data::parse_csv("a,b\n").values.shape(), (kiln::Shape{0, 2}));
}

TEST(Csv, ErrorsNameTheLineAndColumn) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kiln_test_csv_" + std::to_string(::getpid()) + ".csv"))
                               .string();
  std::ofstream(path) << "x,y\n1,2\n3,oops\n";
  const kiln::Error bad = error_of([&] { (void)data::load_csv(path); });
  EXPECT_EQ(bad.code(), ErrorCode::io_error);
  const std::vector<std::string> words = {path, "line 3", "column 2", "'y'", "'oops'"};
  for (const std::string& w : words)
    EXPECT_NE(std::string(bad.what()).find(w), std::string::npos) << w << " in " << bad.what();
  std::ofstream(path) << "x,y\n1,2\n3\n";
  const kiln::Error ragged = error_of([&] { (void)data::load_csv(path); });
  EXPECT_NE(std::string(ragged.what()).find("line 3 has 1 fields, the header 2"), std::string::npos)
      << ragged.what();
  std::remove(path.c_str());
  EXPECT_EQ(error_of([] { (void)data::parse_csv("1,2\n3,\n", {.dtype = DType::i32}); }).code(),
            ErrorCode::io_error);  // an empty field is not an integer
  EXPECT_EQ(error_of([] { (void)data::parse_csv("\"1,2\n"); }).code(), ErrorCode::io_error);
  EXPECT_EQ(error_of([] { (void)data::parse_csv("1\n", {.delimiter = '"'}); }).code(),
            ErrorCode::invalid_select);
}

}  // namespace
