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
/// Shapes are the graph's own: an exported model takes inputs of exactly the placeholders' shapes,
/// unless it is exported with an open batch size (the second form of save_onnx, below).
///
/// Every op maps to ONNX operators that compute the same values, kiln's integer rules included
/// (integer division by zero gives 0, float-to-integer conversion saturates). Ops ONNX cannot
/// express throw kiln::Error(io_error) naming the op and its shape, and nothing is written: the
/// user's C++ callables (`map_elements`, `reduce_rows`), random values (export in eval mode),
/// gradient-only ops, cumprod, index_set (dropped indices) and the LAPACK decompositions but det.
#pragma once

#include <cstddef>
#include <functional>
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

/// One input of a model exported with an open batch size: its name, its dtype and the shape of
/// one example (the batch is the first dimension of the input, before these).
struct OnnxInput {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
};
/// Builds a model's outputs from its inputs (placeholders, in the order given).
using OnnxModelBuilder = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

/// The model `build` computes, exported with an open batch size (torch.onnx.export's
/// dynamic_axes={"input": {0: "batch"}}): every input's first dimension and every output
/// dimension that follows it are the symbolic "batch", so that ONNX Runtime runs the model on
/// batches of any size. `build` is called three times, on placeholders of batch 2, 3 and 5, and
/// the three exports are compared: shapes that grow with the batch (reshapes, expansions) are
/// computed from the input's batch in the model. A graph whose structure or other constants
/// depend on the batch (a mean over the batch dimension, zeros of the batch's shape) is an
/// io_error saying so, and nothing is written. Options name the outputs (inputs are named here).
void save_onnx(const std::string& path, const std::vector<OnnxInput>& inputs,
               const OnnxModelBuilder& build, const OnnxExportOptions& options = {});
std::vector<std::byte> serialize_onnx(const std::vector<OnnxInput>& inputs,
                                      const OnnxModelBuilder& build,
                                      const OnnxExportOptions& options = {});

}  // namespace kiln
