#include "data/onnx_model.hpp"

#include <cstring>

#include "data/protobuf_writer.hpp"
#include "kiln/error.hpp"

namespace kiln::detail {

namespace {

// Field numbers of onnx.proto.
namespace model_field {
constexpr int ir_version = 1, producer_name = 2, producer_version = 3, graph = 7, opset_import = 8;
}
namespace opset_field {
constexpr int domain = 1, version = 2;
}
namespace graph_field {
constexpr int node = 1, name = 2, initializer = 5, input = 11, output = 12;
}
namespace node_field {
constexpr int input = 1, output = 2, name = 3, op_type = 4, attribute = 5;
}
namespace attribute_field {
constexpr int name = 1, f = 2, i = 3, s = 4, ints = 8, type = 20;
}
namespace tensor_field {
constexpr int dims = 1, data_type = 2, name = 8, raw_data = 9;
}
namespace value_info_field {
constexpr int name = 1, type = 2;
}
namespace type_field {
constexpr int tensor_type = 1;
constexpr int elem_type = 1, shape = 2;  // TypeProto.Tensor
constexpr int dim = 1;                   // TensorShapeProto
constexpr int dim_value = 1, dim_param = 2;  // TensorShapeProto.Dimension
}  // namespace type_field

std::string value_info(const std::string& name, OnnxType type, const Shape& shape,
                       const std::vector<std::string>& open_dims) {
  ProtoWriter dims;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    ProtoWriter dim;
    if (i < open_dims.size() && !open_dims[i].empty())
      dim.bytes_field(type_field::dim_param, open_dims[i]);
    else dim.varint_field(type_field::dim_value, shape[i]);
    dims.message_field(type_field::dim, dim);
  }
  ProtoWriter tensor;
  tensor.varint_field(type_field::elem_type, static_cast<std::int32_t>(type));
  tensor.message_field(type_field::shape, dims);
  ProtoWriter type_proto;
  type_proto.message_field(type_field::tensor_type, tensor);
  ProtoWriter info;
  info.bytes_field(value_info_field::name, name);
  info.message_field(value_info_field::type, type_proto);
  return info.bytes();
}

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string raw(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  return raw;
}

}  // namespace

OnnxType onnx_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return OnnxType::f32;
    case DType::f64: return OnnxType::f64;
    case DType::i32: return OnnxType::i32;
    case DType::i64: return OnnxType::i64;
    case DType::boolean: return OnnxType::boolean;
    case DType::f16:
    case DType::bf16:
    case DType::u8:
    case DType::i8:
    case DType::i16:
    case DType::c64:
    case DType::c128: break;
  }
  throw Error(ErrorCode::wrong_type,
              std::string("save_onnx: ") + dtype_name(dtype) + " tensors are not exported");
}

OnnxAttribute OnnxAttribute::integer(std::string name, std::int64_t value) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::i;
  a.i = value;
  return a;
}
OnnxAttribute OnnxAttribute::real(std::string name, float value) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::f;
  a.f = value;
  return a;
}
OnnxAttribute OnnxAttribute::text(std::string name, std::string value) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::s;
  a.s = std::move(value);
  return a;
}
OnnxAttribute OnnxAttribute::integers(std::string name, std::vector<std::int64_t> values) {
  OnnxAttribute a;
  a.name = std::move(name);
  a.kind = Kind::ints;
  a.ints = std::move(values);
  return a;
}

std::string OnnxModel::fresh_name(std::string_view hint) {
  std::string name = "/";  // appended piece by piece: g++ 12 warns falsely about "/" + string
  name += hint;
  name += '_';
  name += std::to_string(next_name_++);
  return name;
}

std::string OnnxModel::add_node(std::string op_type, std::vector<std::string> inputs,
                                std::vector<OnnxAttribute> attributes, int outputs) {
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) names.push_back(fresh_name(op_type));
  std::string first = names.front();
  add_node_named(std::move(op_type), std::move(inputs), std::move(names), std::move(attributes));
  return first;
}

void OnnxModel::add_node_named(std::string op_type, std::vector<std::string> inputs,
                               std::vector<std::string> outputs,
                               std::vector<OnnxAttribute> attributes) {
  ProtoWriter node;
  for (const std::string& in : inputs) node.bytes_field(node_field::input, in);
  for (const std::string& out : outputs) node.bytes_field(node_field::output, out);
  node.bytes_field(node_field::name, "/" + op_type + "_node_" + std::to_string(next_node_++));
  node.bytes_field(node_field::op_type, op_type);
  for (const OnnxAttribute& a : attributes) {
    ProtoWriter attribute;
    attribute.bytes_field(attribute_field::name, a.name);
    switch (a.kind) {
      case OnnxAttribute::Kind::f: attribute.float_field(attribute_field::f, a.f); break;
      case OnnxAttribute::Kind::i: attribute.varint_field(attribute_field::i, a.i); break;
      case OnnxAttribute::Kind::s: attribute.bytes_field(attribute_field::s, a.s); break;
      case OnnxAttribute::Kind::ints:
        attribute.packed_varints(attribute_field::ints, a.ints);
        break;
    }
    attribute.varint_field(attribute_field::type, static_cast<std::int32_t>(a.kind));
    node.message_field(node_field::attribute, attribute);
  }
  nodes_.push_back(node.bytes());
}

std::string OnnxModel::add_initializer(OnnxType type, const Shape& shape, std::string raw,
                                       std::string name) {
  initializers_.push_back({name, type, shape, std::move(raw)});
  return name;
}

std::string OnnxModel::int64s(const std::vector<std::int64_t>& values) {
  return add_initializer(OnnxType::i64, {static_cast<std::int64_t>(values.size())},
                         raw_bytes(values), fresh_name("int64s"));
}

std::string OnnxModel::scalar_of(OnnxType type, Scalar value) {
  std::string raw;
  switch (type) {
    case OnnxType::f32: raw = raw_bytes(std::vector<float>{value.as<float>()}); break;
    case OnnxType::f64: raw = raw_bytes(std::vector<double>{value.as<double>()}); break;
    case OnnxType::i32: raw = raw_bytes(std::vector<std::int32_t>{value.as<std::int32_t>()}); break;
    case OnnxType::i64: raw = raw_bytes(std::vector<std::int64_t>{value.as<std::int64_t>()}); break;
    case OnnxType::boolean: raw = std::string(1, value.as<double>() != 0 ? '\1' : '\0'); break;
  }
  return add_initializer(type, {}, std::move(raw), fresh_name("scalar"));
}

void OnnxModel::add_input(const std::string& name, OnnxType type, const Shape& shape) {
  inputs_.push_back({name, type, shape});
}
void OnnxModel::add_output(const std::string& name, OnnxType type, const Shape& shape) {
  outputs_.push_back({name, type, shape});
}

std::string OnnxModel::serialize() const {
  ProtoWriter graph;
  for (const std::string& n : nodes_) graph.bytes_field(graph_field::node, n);
  graph.bytes_field(graph_field::name, graph_name_);
  for (const Initializer& t : initializers_) {
    ProtoWriter tensor;
    tensor.packed_varints(tensor_field::dims, t.shape);
    tensor.varint_field(tensor_field::data_type, static_cast<std::int32_t>(t.type));
    tensor.bytes_field(tensor_field::name, t.name);
    tensor.bytes_field(tensor_field::raw_data, t.raw);
    graph.bytes_field(graph_field::initializer, tensor.bytes());
  }
  for (const ValueInfo& v : inputs_)
    graph.bytes_field(graph_field::input, value_info(v.name, v.type, v.shape, v.open_dims));
  for (const ValueInfo& v : outputs_)
    graph.bytes_field(graph_field::output, value_info(v.name, v.type, v.shape, v.open_dims));

  ProtoWriter opset;
  opset.bytes_field(opset_field::domain, "");
  opset.varint_field(opset_field::version, kOpset);

  ProtoWriter model;
  model.varint_field(model_field::ir_version, kIrVersion);
  model.bytes_field(model_field::producer_name, "kiln");
  model.bytes_field(model_field::producer_version, "1");
  model.message_field(model_field::graph, graph);
  model.message_field(model_field::opset_import, opset);
  return model.bytes();
}

namespace {
[[noreturn]] void batch_error(const std::string& what) {
  throw Error(ErrorCode::io_error, "save_onnx: with an open batch size, " + what);
}

std::vector<std::int64_t> int64_values(const std::string& raw) {
  std::vector<std::int64_t> v(raw.size() / sizeof(std::int64_t));
  if (!v.empty()) std::memcpy(v.data(), raw.data(), v.size() * sizeof(std::int64_t));
  return v;
}

// Names the dimensions of `mine` that vary with the batch: "batch" where they are the batch in
// every trace, else "<value>_dim<d>" (open, such as a batch times a sequence's length).
void name_open_dims(std::vector<std::string>& open_dims, const Shape& mine,
                    const std::vector<const Shape*>& theirs,
                    const std::vector<std::int64_t>& batches, const std::string& value) {
  open_dims.assign(mine.size(), std::string());
  for (std::size_t d = 0; d < mine.size(); ++d) {
    bool varies = false, follows = mine[d] == batches[0];
    for (std::size_t t = 0; t < theirs.size(); ++t) {
      varies = varies || (*theirs[t])[d] != mine[d];
      follows = follows && (*theirs[t])[d] == batches[t + 1];
    }
    if (varies) open_dims[d] = follows ? "batch" : value + "_dim" + std::to_string(d);
  }
}
}  // namespace

void OnnxModel::open_batch(const std::vector<const OnnxModel*>& others,
                           const std::vector<std::int64_t>& batches) {
  for (const OnnxModel* o : others)
    if (o->nodes_ != nodes_ || o->initializers_.size() != initializers_.size() ||
        o->inputs_.size() != inputs_.size() || o->outputs_.size() != outputs_.size())
      batch_error("the exported graph's structure changes with the batch size");
  auto mark = [&](std::vector<ValueInfo> OnnxModel::*list, const char* kind) {
    for (std::size_t i = 0; i < (this->*list).size(); ++i) {
      ValueInfo& v = (this->*list)[i];
      std::vector<const Shape*> theirs;
      for (const OnnxModel* o : others) {
        const ValueInfo& w = (o->*list)[i];
        if (w.shape.size() != v.shape.size())
          batch_error(std::string(kind) + " " + v.name + "'s rank varies");
        theirs.push_back(&w.shape);
      }
      name_open_dims(v.open_dims, v.shape, theirs, batches, v.name);
    }
  };
  mark(&OnnxModel::inputs_, "input");
  mark(&OnnxModel::outputs_, "output");
  if (inputs_.empty() || inputs_[0].open_dims.empty() || inputs_[0].open_dims[0] != "batch")
    batch_error("the first input's first dimension must be the batch");

  // The batch as a 1-D [1] and as a 0-d int64, read from the first input's shape.
  std::vector<std::string> prologue;
  std::string batch_1d, batch_0d;
  auto batch_node = [&](std::string op, std::vector<std::string> in,
                        std::vector<OnnxAttribute> attrs) {
    const std::string out = fresh_name("batch");
    const std::size_t before = nodes_.size();
    add_node_named(std::move(op), std::move(in), {out}, std::move(attrs));
    prologue.push_back(std::move(nodes_.back()));
    nodes_.resize(before);
    return out;
  };
  std::vector<Initializer> mine_all = std::move(initializers_);
  initializers_.clear();
  for (std::size_t i = 0; i < mine_all.size(); ++i) {
    Initializer& mine = mine_all[i];
    bool varies = false;
    for (const OnnxModel* o : others) {
      const Initializer& theirs = o->initializers_[i];
      if (theirs.name != mine.name || theirs.type != mine.type)
        batch_error("the exported graph's structure changes with the batch size");
      if (theirs.shape != mine.shape)
        batch_error("a constant's shape " + shape_to_string(mine.shape) +
                    " varies with the batch size (values built with the batch's size cannot "
                    "be exported this way)");
      varies = varies || theirs.raw != mine.raw;
    }
    if (!varies) {
      initializers_.push_back(std::move(mine));
      continue;
    }
    if (mine.type != OnnxType::i64 || mine.shape.size() > 1)
      batch_error("a constant " + shape_to_string(mine.shape) +
                  " that is not a shape varies with the batch size (a mean over the batch, or "
                  "values built with the batch's size, cannot be exported this way)");
    // Each element is a * batch + b, found from two traces and checked against the others.
    const std::vector<std::int64_t> v0 = int64_values(mine.raw);
    std::vector<std::vector<std::int64_t>> vt;
    for (const OnnxModel* o : others) vt.push_back(int64_values(o->initializers_[i].raw));
    std::vector<std::int64_t> a(v0.size()), b(v0.size());
    for (std::size_t e = 0; e < v0.size(); ++e) {
      const std::int64_t db = batches[1] - batches[0], dv = vt[0][e] - v0[e];
      if (dv % db != 0)
        batch_error("a shape's entry is not a multiple of the batch plus a constant");
      a[e] = dv / db;
      b[e] = v0[e] - a[e] * batches[0];
      for (std::size_t t = 0; t < vt.size(); ++t)
        if (vt[t][e] != a[e] * batches[t + 1] + b[e])
          batch_error("a shape's entry is not a multiple of the batch plus a constant");
    }
    if (batch_1d.empty())
      batch_1d = batch_node("Shape", {inputs_[0].name},
                            {OnnxAttribute::integer("start", 0), OnnxAttribute::integer("end", 1)});
    std::string batch = batch_1d;
    Shape coefficient_shape = {static_cast<std::int64_t>(v0.size())};
    if (mine.shape.empty()) {
      if (batch_0d.empty()) batch_0d = batch_node("Squeeze", {batch_1d}, {});
      batch = batch_0d;
      coefficient_shape = {};
    }
    const std::string a_name =
        add_initializer(OnnxType::i64, coefficient_shape, raw_bytes(a), fresh_name("batch_a"));
    const std::string b_name =
        add_initializer(OnnxType::i64, coefficient_shape, raw_bytes(b), fresh_name("batch_b"));
    const std::string scaled = batch_node("Mul", {batch, a_name}, {});
    // The sum takes the constant's own name, so that its readers read it.
    const std::size_t before = nodes_.size();
    add_node_named("Add", {scaled, b_name}, {mine.name}, {});
    prologue.push_back(std::move(nodes_.back()));
    nodes_.resize(before);
  }
  nodes_.insert(nodes_.begin(), prologue.begin(), prologue.end());
}

}  // namespace kiln::detail
