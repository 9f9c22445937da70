// The process's setting for f32 matrix products (kiln::set_float32_matmul_precision), as the
// device backends read it when they queue a product.
#pragma once

namespace kiln::detail {

// Whether f32 products may use TF32 tensor cores ("high" or "medium"); false by default.
bool float32_products_may_use_tf32();

}  // namespace kiln::detail
