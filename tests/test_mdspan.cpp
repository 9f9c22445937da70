// include/kiln/mdspan.hpp, where the standard library has std::mdspan; elsewhere the test says
// so and is counted as skipped.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.hpp"
#include "kiln/mdspan.hpp"
#include "test_support.hpp"

namespace {

#if defined(__cpp_lib_mdspan)
TEST(Mdspan, AsMdspanAndBack) {
  const kiln::Tensor x =
      kiln::reshape(kiln::convert(kiln::arange(6), kiln::DType::f32), {2, 3}) * 2.f;
  const auto s = kiln::as_mdspan<float, 2>(x);
  EXPECT_EQ(s.extent(0), 2);
  EXPECT_EQ(s.extent(1), 3);
  EXPECT_EQ((s[1, 2]), 10.f);
  EXPECT_EQ(s.data_handle(), x.data<float>().data());
  EXPECT_EQ(kiln_test::code_of([&] { (void)kiln::as_mdspan<float, 3>(x); }),
            kiln::ErrorCode::illegal_dimensionality);
  std::vector<double> v{1, 2, 3, 4, 5, 6};
  const kiln::Tensor t = kiln::from_mdspan(std::mdspan(v.data(), 3, 2));
  EXPECT_EQ(t.shape(), (kiln::Shape{3, 2}));
  EXPECT_EQ(t.to_vector<double>(), v);
}
#else
TEST(Mdspan, AsMdspanAndBack) {
  GTEST_SKIP() << "this compiler's standard library has no std::mdspan (C++23 <mdspan>): "
                  "kiln/mdspan.hpp declares nothing here";
}
#endif

}  // namespace
