// kiln: lazily evaluated tensor graphs. Include this one header for the whole C++ API.
#pragma once

#include "kiln/activations.hpp"
#include "kiln/autodiff.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/custom.hpp"
#include "kiln/error.hpp"
#include "kiln/executor.hpp"
#include "kiln/graph.hpp"
#include "kiln/indexing.hpp"
#include "kiln/linalg.hpp"
#include "kiln/normalization.hpp"
#include "kiln/ops.hpp"
#include "kiln/random.hpp"
#include "kiln/tensor.hpp"
#include "kiln/tensor_index.hpp"
#include "kiln/types.hpp"
#include "kiln/windows.hpp"
