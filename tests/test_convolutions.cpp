// Grouped conv2d, conv3d and conv_transpose2d against direct loops written here from their
// definitions, in f64 and in f32 (where the CPU executor takes oneDNN's kernels), with hand
// values for the small cases and the errors of shapes that do not fit.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kiln/kiln.hpp"
#include "test_support.hpp"

namespace {

using kiln::DType;
using kiln::ErrorCode;
using kiln::Shape;
using kiln::Tensor;
using kiln_test::code_of;
using kiln_test::numel_of;
using F64 = std::vector<double>;
using I3 = std::array<std::int64_t, 3>;

F64 random_values(std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  F64 v(static_cast<std::size_t>(n));
  for (double& x : v) x = dist(gen);
  return v;
}

Tensor random_tensor(Shape shape, unsigned seed, DType dtype) {
  const Tensor t = Tensor::from(random_values(numel_of(shape), seed), shape);
  return dtype == DType::f64 ? t : kiln::convert(t, dtype);
}

F64 values(const Tensor& t) { return kiln::convert(t, DType::f64).to_vector<double>(); }

// A 3-D convolution by its definition: out[n, o, d, h, w] = sum over the group's channels c and
// the taps (i, j, k) of x[n, c, d s + i dil - p, ...] w[o, c, i, j, k]. Lower ranks are this
// with sizes of 1.
struct Geometry {
  I3 stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  std::int64_t groups = 1;
};

F64 direct_conv3d(const F64& x, const Shape& xs, const F64& w, const Shape& ws, const Geometry& g,
                  Shape* out_shape) {
  const std::int64_t n_ = xs[0], c_ = xs[1], o_ = ws[0], cg = ws[1];
  I3 in{xs[2], xs[3], xs[4]}, k{ws[2], ws[3], ws[4]}, out{};
  for (int a = 0; a < 3; ++a)
    out[a] = (in[a] + 2 * g.padding[a] - g.dilation[a] * (k[a] - 1) - 1) / g.stride[a] + 1;
  *out_shape = {n_, o_, out[0], out[1], out[2]};
  F64 r(static_cast<std::size_t>(n_ * o_ * out[0] * out[1] * out[2]), 0.0);
  const std::int64_t og = o_ / g.groups;
  for (std::int64_t n = 0; n < n_; ++n)
    for (std::int64_t o = 0; o < o_; ++o)
      for (std::int64_t d = 0; d < out[0]; ++d)
        for (std::int64_t h = 0; h < out[1]; ++h)
          for (std::int64_t q = 0; q < out[2]; ++q) {
            double acc = 0;
            for (std::int64_t ci = 0; ci < cg; ++ci) {
              const std::int64_t c = (o / og) * cg + ci;
              for (std::int64_t i = 0; i < k[0]; ++i)
                for (std::int64_t j = 0; j < k[1]; ++j)
                  for (std::int64_t l = 0; l < k[2]; ++l) {
                    const std::int64_t z = d * g.stride[0] + i * g.dilation[0] - g.padding[0];
                    const std::int64_t y = h * g.stride[1] + j * g.dilation[1] - g.padding[1];
                    const std::int64_t x0 = q * g.stride[2] + l * g.dilation[2] - g.padding[2];
                    if (z < 0 || z >= in[0] || y < 0 || y >= in[1] || x0 < 0 || x0 >= in[2])
                      continue;
                    acc += x[(((n * c_ + c) * in[0] + z) * in[1] + y) * in[2] + x0] *
                           w[(((o * cg + ci) * k[0] + i) * k[1] + j) * k[2] + l];
                  }
            }
            r[(((n * o_ + o) * out[0] + d) * out[1] + h) * out[2] + q] = acc;
          }
  (void)c_;
  return r;
}

// A transposed 2-D convolution by its definition: every input element scatters its products
// with the weight [Cin, Cout / groups, kH, kW] into out[n, co, h s + i dil - p, w s + j dil - p].
F64 direct_conv_transpose2d(const F64& x, const Shape& xs, const F64& w, const Shape& ws,
                            std::array<std::int64_t, 2> s, std::array<std::int64_t, 2> p,
                            std::array<std::int64_t, 2> op, std::array<std::int64_t, 2> dil,
                            std::int64_t groups, Shape* out_shape) {
  const std::int64_t n_ = xs[0], ci_ = xs[1], h_ = xs[2], w_ = xs[3];
  const std::int64_t cog = ws[1], co_ = cog * groups, kh = ws[2], kw = ws[3];
  const std::int64_t oh = (h_ - 1) * s[0] - 2 * p[0] + dil[0] * (kh - 1) + op[0] + 1;
  const std::int64_t ow = (w_ - 1) * s[1] - 2 * p[1] + dil[1] * (kw - 1) + op[1] + 1;
  *out_shape = {n_, co_, oh, ow};
  F64 r(static_cast<std::size_t>(n_ * co_ * oh * ow), 0.0);
  const std::int64_t cig = ci_ / groups;
  for (std::int64_t n = 0; n < n_; ++n)
    for (std::int64_t c = 0; c < ci_; ++c)
      for (std::int64_t h = 0; h < h_; ++h)
        for (std::int64_t q = 0; q < w_; ++q)
          for (std::int64_t oc = 0; oc < cog; ++oc)
            for (std::int64_t i = 0; i < kh; ++i)
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t y = h * s[0] + i * dil[0] - p[0];
                const std::int64_t z = q * s[1] + j * dil[1] - p[1];
                if (y < 0 || y >= oh || z < 0 || z >= ow) continue;
                const std::int64_t co = (c / cig) * cog + oc;
                r[((n * co_ + co) * oh + y) * ow + z] +=
                    x[((n * ci_ + c) * h_ + h) * w_ + q] * w[((c * cog + oc) * kh + i) * kw + j];
              }
  return r;
}

void expect_near(const F64& got, const F64& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
}

class ConvolutionTypes : public ::testing::TestWithParam<DType> {
 protected:
  double tol() const { return GetParam() == DType::f64 ? 1e-12 : 2e-5; }
};

TEST_P(ConvolutionTypes, GroupedConv2dMatchesTheDefinition) {
  // groups 2 (each half of the filters sees half of the channels) and depthwise (groups = C).
  const std::vector<std::array<std::int64_t, 3>> cases{{4, 6, 2}, {3, 3, 3}, {6, 12, 3}};
  for (const auto& [c, o, groups] : cases) {
    const Shape xs{2, c, 7, 6}, ws{o, c / groups, 3, 2};
    const Tensor x = random_tensor(xs, 1, GetParam()), w = random_tensor(ws, 2, GetParam());
    kiln::Conv2dOptions opt;
    opt.stride = {2, 1};
    opt.padding = {1, 1};
    opt.dilation = {1, 2};
    opt.groups = groups;
    const Tensor y = kiln::conv2d(x, w, Tensor(), opt);
    Geometry g;
    g.stride = {1, 2, 1};
    g.padding = {0, 1, 1};
    g.dilation = {1, 1, 2};
    g.groups = groups;
    Shape want_shape;
    const F64 want = direct_conv3d(values(x), {2, c, 1, 7, 6}, values(w), {o, c / groups, 1, 3, 2},
                                   g, &want_shape);
    EXPECT_EQ(y.shape(), (Shape{2, o, want_shape[3], want_shape[4]}));
    EXPECT_EQ(y.dtype(), GetParam());
    expect_near(values(y), want, tol());
  }
}

TEST_P(ConvolutionTypes, Conv3dMatchesTheDefinition) {
  const Shape xs{2, 4, 5, 6, 5}, ws{6, 2, 3, 2, 3};
  const Tensor x = random_tensor(xs, 3, GetParam()), w = random_tensor(ws, 4, GetParam());
  const Tensor bias = random_tensor({6}, 5, GetParam());
  kiln::Conv3dOptions opt;
  opt.stride = {2, 1, 2};
  opt.padding = {1, 0, 1};
  opt.dilation = {1, 2, 1};
  opt.groups = 2;
  const Tensor y = kiln::conv3d(x, w, bias, opt);
  Geometry g;
  g.stride = opt.stride;
  g.padding = opt.padding;
  g.dilation = opt.dilation;
  g.groups = 2;
  Shape want_shape;
  F64 want = direct_conv3d(values(x), xs, values(w), ws, g, &want_shape);
  const F64 b = values(bias);
  const std::int64_t plane = want_shape[2] * want_shape[3] * want_shape[4];
  for (std::size_t i = 0; i < want.size(); ++i)
    want[i] += b[static_cast<std::size_t>((static_cast<std::int64_t>(i) / plane) % 6)];
  EXPECT_EQ(y.shape(), want_shape);
  expect_near(values(y), want, tol());
  // An unbatched [C, D, H, W] input gives [O, oD, oH, oW].
  const Tensor one = kiln::conv3d(x[1], w, bias, opt);
  EXPECT_EQ(one.shape(), (Shape{6, want_shape[2], want_shape[3], want_shape[4]}));
  expect_near(values(one), F64(want.begin() + 6 * plane, want.end()), tol());
}

TEST_P(ConvolutionTypes, ConvTranspose2dMatchesTheDefinition) {
  struct Case {
    Shape xs, ws;
    std::array<std::int64_t, 2> stride, padding, output_padding, dilation;
    std::int64_t groups;
  };
  // The decoder's usual k3 s2 p1 op1 (oneDNN's padding on the right is then 0), an output
  // padding beyond the padding (the right padding is negative: the reference kernel runs), a
  // dilation, groups, and rectangular everything.
  for (const Case& k : {Case{{2, 3, 4, 5}, {3, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
                        Case{{1, 2, 3, 3}, {2, 3, 2, 2}, {3, 2}, {0, 0}, {2, 1}, {1, 1}, 1},
                        Case{{1, 4, 3, 4}, {4, 1, 2, 3}, {1, 2}, {1, 0}, {0, 1}, {2, 1}, 2},
                        Case{{2, 4, 5, 3}, {4, 3, 3, 2}, {2, 1}, {2, 0}, {1, 0}, {1, 2}, 4}}) {
    const Tensor x = random_tensor(k.xs, 6, GetParam()), w = random_tensor(k.ws, 7, GetParam());
    kiln::ConvTranspose2dOptions opt;
    opt.stride = k.stride;
    opt.padding = k.padding;
    opt.output_padding = k.output_padding;
    opt.dilation = k.dilation;
    opt.groups = k.groups;
    const Tensor y = kiln::conv_transpose2d(x, w, Tensor(), opt);
    Shape want_shape;
    const F64 want = direct_conv_transpose2d(values(x), k.xs, values(w), k.ws, k.stride,
                                             k.padding, k.output_padding, k.dilation, k.groups,
                                             &want_shape);
    EXPECT_EQ(y.shape(), want_shape);
    expect_near(values(y), want, tol());
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ConvolutionTypes, ::testing::Values(DType::f64, DType::f32),
                         [](const auto& info) { return std::string(kiln::dtype_name(info.param)); });

TEST(ConvTranspose2d, HandValues) {
  // Stride 2 with a 2x2 kernel of ones: every input value fills its own 2x2 block.
  const Tensor x = kiln::tensor({{{1.0, 2.0}, {3.0, 4.0}}});
  const Tensor w = kiln::ones({1, 1, 2, 2}, DType::f64);
  const Tensor y = kiln::conv_transpose2d(x, w, kiln::tensor({0.5}), {.stride = {2, 2}});
  EXPECT_EQ(y.shape(), (Shape{1, 4, 4}));
  EXPECT_EQ(values(y), (F64{1.5, 1.5, 2.5, 2.5, 1.5, 1.5, 2.5, 2.5,  //
                            3.5, 3.5, 4.5, 4.5, 3.5, 3.5, 4.5, 4.5}));
  // Stride 1: overlapping blocks add up; padding 1 cuts the border off again.
  const Tensor z = kiln::conv_transpose2d(x, w);
  EXPECT_EQ(values(z), (F64{1, 3, 2, 4, 10, 6, 3, 7, 4}));
  EXPECT_EQ(values(kiln::conv_transpose2d(x, w, Tensor(), {.padding = {1, 0}})),
            (F64{4, 10, 6}));
}

TEST(ConvTranspose2d, IsTheGradientOfConv2d) {
  // <conv2d(a, w), b> = <a, conv_transpose2d(b, w)>: the two are adjoint, and conv2d maps the
  // transposed result's shape back to the input's.
  const Tensor a = random_tensor({2, 3, 9, 8}, 8, DType::f64);
  const Tensor w = random_tensor({4, 3, 3, 2}, 9, DType::f64);
  kiln::Conv2dOptions c{.stride = {2, 3}, .padding = {1, 1}, .dilation = {1, 2}};
  const Tensor fa = kiln::conv2d(a, w, Tensor(), c);
  const Tensor b = random_tensor(fa.shape(), 10, DType::f64);
  kiln::ConvTranspose2dOptions t{.stride = c.stride, .padding = c.padding,
                                 .output_padding = {0, 1}, .dilation = c.dilation};
  const Tensor tb = kiln::conv_transpose2d(b, w, Tensor(), t);
  EXPECT_EQ(tb.shape(), a.shape());
  EXPECT_NEAR(kiln::sum(fa * b).item<double>(), kiln::sum(a * tb).item<double>(), 1e-10);
}

TEST(Conv3d, HandValues) {
  // One channel, a [2, 1, 1] kernel (1, -1) over depth: the difference of neighbouring planes.
  const Tensor x = kiln::reshape(kiln::tensor({1.0, 2.0, 4.0, 8.0, 16.0, 32.0}), {1, 1, 3, 1, 2});
  const Tensor w = kiln::reshape(kiln::tensor({1.0, -1.0}), {1, 1, 2, 1, 1});
  const Tensor y = kiln::conv3d(x, w);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 1, 2}));
  EXPECT_EQ(values(y), (F64{-3, -6, -12, -24}));
  // Padding 1 in depth and stride 2: planes (pad, 0) and (1, 2).
  EXPECT_EQ(values(kiln::conv3d(x, w, Tensor(), {.stride = {2, 1, 1}, .padding = {1, 0, 0}})),
            (F64{-1, -2, -12, -24}));
}

TEST(Convolutions, ShapesThatDoNotFitAreErrors) {
  const Tensor x = kiln::zeros({1, 4, 5, 5});
  EXPECT_EQ(code_of([&] { (void)kiln::conv2d(x, kiln::zeros({6, 2, 3, 3}), Tensor(), {.groups = 3}); }),
            ErrorCode::incompatible_shapes);  // 4 channels in 3 groups
  EXPECT_EQ(code_of([&] { (void)kiln::conv2d(x, kiln::zeros({5, 2, 3, 3}), Tensor(), {.groups = 2}); }),
            ErrorCode::incompatible_shapes);  // 5 filters in 2 groups
  EXPECT_EQ(code_of([&] { (void)kiln::conv2d(x, kiln::zeros({4, 4, 3, 3}), Tensor(), {.groups = 0}); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] {
              (void)kiln::conv_transpose2d(x, kiln::zeros({4, 1, 3, 3}), Tensor(),
                                           {.stride = {2, 2}, .output_padding = {2, 0}});
            }),
            ErrorCode::invalid_select);  // output padding not below the stride
  EXPECT_EQ(code_of([&] { (void)kiln::conv_transpose2d(x, kiln::zeros({3, 1, 3, 3})); }),
            ErrorCode::incompatible_shapes);  // weight's first dimension is Cin
  EXPECT_EQ(code_of([&] {
              (void)kiln::conv_transpose2d(x, kiln::zeros({4, 1, 1, 1}), Tensor(),
                                           {.padding = {3, 0}});
            }),
            ErrorCode::invalid_select);  // padding eats the whole output
  EXPECT_EQ(code_of([&] { (void)kiln::conv3d(kiln::zeros({4, 5, 5}), kiln::zeros({1, 4, 1, 1, 1})); }),
            ErrorCode::illegal_dimensionality);
  const Tensor v = kiln::zeros({1, 4, 2, 5, 5});
  EXPECT_EQ(code_of([&] { (void)kiln::conv3d(v, kiln::zeros({1, 4, 3, 1, 1})); }),
            ErrorCode::invalid_select);  // depth window 3 over 2 planes
  EXPECT_EQ(code_of([&] { (void)kiln::conv3d(v, kiln::zeros({1, 3, 1, 1, 1})); }),
            ErrorCode::incompatible_shapes);
  EXPECT_EQ(code_of([&] {
              (void)kiln::conv3d(kiln::zeros({1, 1, 1, 1, 1}, DType::i32),
                                 kiln::zeros({1, 1, 1, 1, 1}, DType::i32));
            }),
            ErrorCode::wrong_type);
}

}  // namespace
