// The softmax family's shift: each row (along the normalised axis) is shifted by its maximum so
// that the exponentials cannot overflow, except a row whose maximum is not finite (a NaN, or an
// infinity), which is not shifted, so that NaN and infinities come out as the formula gives.
#pragma once

#include <cmath>

namespace kiln::detail {

template <class T> inline T softmax_shift(T row_maximum) {
  return std::isfinite(row_maximum) ? row_maximum : T{0};
}

}  // namespace kiln::detail
