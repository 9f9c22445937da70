// An ONNX model under construction: nodes, initializers, the graph's inputs and outputs, written
// as an ONNX ModelProto (onnx.proto's field numbers) by data/protobuf_writer. It knows ONNX's
// vocabulary, not kiln's graph; data/onnx_export.cpp maps one to the other.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/types.hpp"

namespace kiln::detail {

// ONNX's TensorProto.DataType codes of the types an exported graph uses.
enum class OnnxType : std::int32_t { f32 = 1, i32 = 6, i64 = 7, boolean = 9, f64 = 11 };
OnnxType onnx_type(DType dtype);

struct OnnxAttribute {
  enum class Kind : std::int32_t { f = 1, i = 2, s = 3, ints = 7 };
  static OnnxAttribute integer(std::string name, std::int64_t value);
  static OnnxAttribute real(std::string name, float value);
  static OnnxAttribute text(std::string name, std::string value);
  static OnnxAttribute integers(std::string name, std::vector<std::int64_t> values);

  std::string name;
  Kind kind = Kind::i;
  std::int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<std::int64_t> ints;
};

class OnnxModel {
 public:
  // Opset 17 (ONNX 1.12, IR version 8): what Debian's python3-onnx checks and every current
  // ONNX Runtime runs.
  static constexpr std::int64_t kOpset = 17;
  static constexpr std::int64_t kIrVersion = 8;

  explicit OnnxModel(std::string graph_name) : graph_name_(std::move(graph_name)) {}

  // A fresh value name (names the exporter makes never collide with the user's: they start
  // with '/').
  std::string fresh_name(std::string_view hint);

  // Adds a node; returns the name of its (first) output.
  std::string add_node(std::string op_type, std::vector<std::string> inputs,
                       std::vector<OnnxAttribute> attributes = {}, int outputs = 1);
  // Adds a node with outputs named by the caller.
  void add_node_named(std::string op_type, std::vector<std::string> inputs,
                      std::vector<std::string> outputs, std::vector<OnnxAttribute> attributes);

  // An initializer (a constant of the graph) with the given little-endian bytes.
  std::string add_initializer(OnnxType type, const Shape& shape, std::string raw, std::string name);
  std::string int64s(const std::vector<std::int64_t>& values);  // 1-D int64 initializer
  std::string scalar_of(OnnxType type, Scalar value);           // 0-d initializer

  void add_input(const std::string& name, OnnxType type, const Shape& shape);
  void add_output(const std::string& name, OnnxType type, const Shape& shape);

  // The serialised ModelProto.
  std::string serialize() const;

  // Leaves the batch size open: this model and `others` are the same model exported with the
  // first dimension of every input (the batch) at `batches[0]` and at `batches[1...]` in turn.
  // Dimensions of inputs and outputs that follow the batch become the symbolic "batch" (others
  // that vary with it, "<name>_dim<d>"), and int64
  // constants that vary with it (shapes of reshapes and expansions) are computed from the first
  // input's batch as a * batch + b. Anything else that varies (the graph's structure, another
  // constant) is an io_error naming what.
  void open_batch(const std::vector<const OnnxModel*>& others,
                  const std::vector<std::int64_t>& batches);

 private:
  struct ValueInfo {
    std::string name;
    OnnxType type;
    Shape shape;
    std::vector<std::string> open_dims = {};  // symbolic names of dimensions ("batch"), or ""
  };
  struct Initializer {
    std::string name;
    OnnxType type;
    Shape shape;
    std::string raw;  // little-endian values
  };
  std::string graph_name_;
  std::vector<std::string> nodes_;  // serialised NodeProtos
  std::vector<Initializer> initializers_;
  std::vector<ValueInfo> inputs_, outputs_;
  std::int64_t next_name_ = 0;
  std::int64_t next_node_ = 0;  // node names, unique however the nodes are reordered
};

}  // namespace kiln::detail
