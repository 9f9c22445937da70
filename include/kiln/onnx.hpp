/// @file
/// ONNX export: an inference graph of kiln tensors written as an ONNX model (opset 17, IR
/// version 8), which ONNX Runtime and every other ONNX tool read.
///
/// The graph runs from placeholders to outputs, the way it is built for a compiled function:
///
///   kiln::Tensor image = kiln::placeholder({1, 1, 28, 28}, kiln::DType::f32, "image");
///   model->eval();                        // dropout off, batch norm on its running statistics
///   kiln::save_onnx("model.onnx", {image}, {model->forward(image)});
///
/// Each placeholder becomes a graph input (named by the placeholder, else `input<i>`), each
/// output a graph output (`output<i>` unless named in the options), and every other leaf or
/// evaluated tensor the graph reads an initializer holding its values (the model's weights).
/// Shapes are the graph's own: an exported model takes inputs of exactly the placeholders' shapes.
///
/// Every op maps to ONNX operators that compute the same values, kiln's integer rules included
/// (integer division by zero gives 0, float-to-integer conversion saturates). Ops ONNX cannot
/// express throw kiln::Error(io_error) naming the op and its shape, and nothing is written: the
/// user's C++ callables (`map_elements`, `reduce_rows`), random values (export in eval mode),
/// gradient-only ops, cumprod, index_set (dropped indices) and the LAPACK decompositions but det.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

struct OnnxExportOptions {
  std::vector<std::string> input_names;   ///< empty: the placeholders' names, else `input<i>`
  std::vector<std::string> output_names;  ///< empty: `output<i>`
  std::string graph_name = "kiln";
};

/// Writes the graph from `inputs` (distinct placeholders) to `outputs` as an ONNX model, replacing
/// `path` atomically. Evaluates the leaves it stores as initializers. Errors (a placeholder the
/// outputs read that is not among the inputs, an input that is not a placeholder, an op without
/// an ONNX form, names that collide) throw kiln::Error before anything is written.
void save_onnx(const std::string& path, const std::vector<Tensor>& inputs,
               const std::vector<Tensor>& outputs, const OnnxExportOptions& options = {});
/// The same model as bytes (a serialised ONNX ModelProto).
std::vector<std::byte> serialize_onnx(const std::vector<Tensor>& inputs,
                                      const std::vector<Tensor>& outputs,
                                      const OnnxExportOptions& options = {});

}  // namespace kiln
