// nn::init: PyTorch's in-place initialisations of parameters (kiln/nn.hpp).
#include <cmath>

#include "kiln/nn.hpp"
#include "kiln/random.hpp"

namespace kiln::nn::init {

std::pair<std::int64_t, std::int64_t> fans(const Shape& shape) {
  if (shape.size() < 2)
    throw Error(
        ErrorCode::illegal_dimension,
        "nn::init: fans need a shape of two or more dimensions, got " + shape_to_string(shape));
  std::int64_t receptive = 1;
  for (std::size_t i = 2; i < shape.size(); ++i) receptive *= shape[i];
  return {shape[1] * receptive, shape[0] * receptive};
}

namespace {

double leaky_relu_gain(double a) { return std::sqrt(2.0 / (1.0 + a * a)); }

void normal_of_std(const Parameter& p, double mean, double std) {
  if (!(std >= 0))
    throw Error(ErrorCode::invalid_select, "nn::init: a standard deviation must be >= 0");
  const Tensor z = kiln::random_normal(p.shape(), next_seed(), DType::f64);
  p.copy_(detach(convert(z * std + mean, DType::f32)));
}

double positive_fan(std::int64_t fan, const Parameter& p) {
  if (fan <= 0)
    throw Error(ErrorCode::illegal_dimension, "nn::init: parameter '" + p.name() + "' of shape " +
                                                  shape_to_string(p.shape()) + " has a fan of 0");
  return static_cast<double>(fan);
}

}  // namespace

void uniform_(const Parameter& p, double low, double high) {
  p.copy_(nn::uniform(p.shape(), low, high));
}

void normal_(const Parameter& p, double mean, double std) { normal_of_std(p, mean, std); }

void constant_(const Parameter& p, double value) {
  p.copy_(detach(full(p.shape(), static_cast<float>(value))));
}

void zeros_(const Parameter& p) { constant_(p, 0.0); }
void ones_(const Parameter& p) { constant_(p, 1.0); }

void xavier_uniform_(const Parameter& p, double gain) {
  const auto [in, out] = fans(p.shape());
  const double bound = gain * std::sqrt(6.0 / (positive_fan(in, p) + positive_fan(out, p)));
  p.copy_(nn::uniform(p.shape(), -bound, bound));
}

void xavier_normal_(const Parameter& p, double gain) {
  const auto [in, out] = fans(p.shape());
  normal_of_std(p, 0.0, gain * std::sqrt(2.0 / (positive_fan(in, p) + positive_fan(out, p))));
}

void kaiming_uniform_(const Parameter& p, double a) {
  const double bound = leaky_relu_gain(a) * std::sqrt(3.0 / positive_fan(fans(p.shape()).first, p));
  p.copy_(nn::uniform(p.shape(), -bound, bound));
}

void kaiming_normal_(const Parameter& p, double a) {
  normal_of_std(p, 0.0, leaky_relu_gain(a) / std::sqrt(positive_fan(fans(p.shape()).first, p)));
}

}  // namespace kiln::nn::init
