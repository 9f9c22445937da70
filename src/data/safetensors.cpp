// safetensors reading and writing; the format is summarised in include/kiln/safetensors.hpp.
#include "kiln/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "data/json.hpp"
#include "data/whole_files.hpp"
#include "kiln/error.hpp"

namespace kiln {

namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors is little-endian; add byte swapping for this host");

// The reference implementation's bound on the header, which keeps a hostile length harmless.
constexpr std::uint64_t kMaxHeader = 100'000'000;
constexpr std::size_t kMaxRank = 64;

[[noreturn]] void damaged(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::io_error, "load_safetensors: " + source + ": " + what);
}

struct FormatType {
  const char* name;
  bool kiln_has;
  DType dtype;
  std::size_t size;
};

// Every dtype the format names, so that a file with one kiln lacks gets that said, not "damaged".
constexpr FormatType kTypes[] = {
    {"F32", true, DType::f32, 4},     {"F64", true, DType::f64, 8},
    {"I32", true, DType::i32, 4},     {"I64", true, DType::i64, 8},
    {"F16", false, DType::f32, 2},    {"BF16", false, DType::f32, 2},
    {"I8", false, DType::f32, 1},     {"U8", false, DType::f32, 1},
    {"I16", false, DType::f32, 2},    {"U16", false, DType::f32, 2},
    {"U32", false, DType::f32, 4},    {"U64", false, DType::f32, 8},
    {"BOOL", false, DType::f32, 1},   {"F8_E4M3", false, DType::f32, 1},
    {"F8_E5M2", false, DType::f32, 1}};

const FormatType* type_named(const std::string& name) {
  for (const FormatType& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

const char* format_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    default: break;
  }
  throw Error(ErrorCode::wrong_type,
              "save_safetensors: no safetensors dtype for " + std::string(dtype_name(dtype)));
}

std::uint64_t non_negative(const detail::Json& v, const std::string& source,
                           const std::string& what) {
  if (v.kind != detail::Json::Kind::number || !v.is_integer || v.integer < 0)
    damaged(source, what + " is not a non-negative integer");
  return static_cast<std::uint64_t>(v.integer);
}

struct Entry {
  std::string name;
  const FormatType* type;
  Shape shape;
  std::uint64_t begin, end;
};

Entry entry_of(const std::string& name, const detail::Json& v, const std::string& source) {
  using Kind = detail::Json::Kind;
  const std::string what = "tensor '" + name + "'";
  if (v.kind != Kind::object) damaged(source, what + " is not described by an object");
  for (const auto& [key, member] : v.object)
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      damaged(source, what + " has an unknown field '" + key + "'");
  const detail::Json* dtype = v.find("dtype");
  const detail::Json* shape = v.find("shape");
  const detail::Json* offsets = v.find("data_offsets");
  if (!dtype || !shape || !offsets)
    damaged(source, what + " lacks " + (!dtype ? "dtype" : !shape ? "shape" : "data_offsets"));
  if (dtype->kind != Kind::string) damaged(source, what + ": dtype is not a string");
  Entry e{name, type_named(dtype->string), {}, 0, 0};
  if (e.type == nullptr) damaged(source, what + " has an unknown dtype '" + dtype->string + "'");
  if (shape->kind != Kind::array || shape->array.size() > kMaxRank)
    damaged(source,
            what + ": shape is not a list of at most " + std::to_string(kMaxRank) + " dimensions");
  std::uint64_t numel = 1;
  bool empty = false;
  for (const detail::Json& d : shape->array) {
    const std::uint64_t dim = non_negative(d, source, what + ": a dimension");
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      damaged(source, what + ": a dimension is too large");
    e.shape.push_back(static_cast<std::int64_t>(dim));
    if (dim == 0) empty = true;
    // Saturate: a product past 2^62 cannot match any byte range of a real file.
    numel = numel > (std::uint64_t{1} << 62) / std::max<std::uint64_t>(dim, 1)
                ? std::uint64_t{1} << 62
                : numel * dim;
  }
  if (empty) numel = 0;
  if (offsets->kind != Kind::array || offsets->array.size() != 2)
    damaged(source, what + ": data_offsets is not [begin, end]");
  e.begin = non_negative(offsets->array[0], source, what + ": data_offsets");
  e.end = non_negative(offsets->array[1], source, what + ": data_offsets");
  if (e.end < e.begin) damaged(source, what + ": data_offsets end before they begin");
  if (e.end - e.begin != numel * e.type->size)
    damaged(source, what + " of shape " + shape_to_string(e.shape) + " needs " +
                        std::to_string(numel * e.type->size) + " bytes of " + e.type->name +
                        ", its data_offsets give " + std::to_string(e.end - e.begin));
  return e;
}

}  // namespace

const Tensor& Safetensors::at(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw Error(ErrorCode::invalid_select, "Safetensors::at: no tensor named '" + name + "'");
}

bool Safetensors::contains(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const auto& e) { return e.first == name; });
}

Safetensors parse_safetensors(std::span<const std::byte> bytes, const std::string& source) {
  using Kind = detail::Json::Kind;
  if (bytes.size() < 8) damaged(source, "too short for a safetensors file");
  std::uint64_t header_size;
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > kMaxHeader || header_size > bytes.size() - 8)
    damaged(source, "its header length " + std::to_string(header_size) +
                        " is larger than the file or than " + std::to_string(kMaxHeader) +
                        " bytes (not a safetensors file?)");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8,
                              static_cast<std::size_t>(header_size));
  if (text.empty() || text.front() != '{') damaged(source, "the header is not a JSON object");
  detail::Json header;
  try {
    header = detail::parse_json(text, 8);
  } catch (const detail::JsonError& e) {
    damaged(source, std::string("the header is not valid JSON: ") + e.what());
  }
  const std::span<const std::byte> data = bytes.subspan(8 + static_cast<std::size_t>(header_size));
  Safetensors out;
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.object) {
    if (name == "__metadata__") {
      if (v.kind != Kind::object) damaged(source, "__metadata__ is not an object");
      for (const auto& [key, value] : v.object) {
        if (value.kind != Kind::string)
          damaged(source, "__metadata__ entry '" + key + "' is not a string");
        out.metadata.emplace_back(key, value.string);
      }
      continue;
    }
    entries.push_back(entry_of(name, v, source));
  }
  // The byte ranges must tile the data exactly: no overlap, no hole, nothing past the end.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t covered = 0;
  for (const Entry& e : entries) {
    if (e.begin != covered)
      damaged(source, "tensor '" + e.name + "' begins at byte " + std::to_string(e.begin) +
                          " of the data, where " +
                          (e.begin < covered ? "another tensor's bytes lie"
                                             : "a hole begins at " + std::to_string(covered)));
    covered = e.end;
  }
  if (covered != data.size())
    damaged(source, "the tensors cover " + std::to_string(covered) +
                        " bytes of data, the file has " + std::to_string(data.size()));
  for (const Entry& e : entries)
    if (!e.type->kiln_has)
      throw Error(ErrorCode::wrong_type,
                  "load_safetensors: " + source + ": tensor '" + e.name + "' is " + e.type->name +
                      ", which kiln does not have (it reads F32, F64, I32 and I64)");
  for (const Entry& e : entries)
    out.tensors.emplace_back(e.name,
                             Tensor::from_bytes(data.data() + e.begin, e.type->dtype, e.shape));
  return out;
}

Safetensors load_safetensors(const std::string& path) {
  const std::vector<char> bytes = detail::read_whole_file(path, "load_safetensors");
  return parse_safetensors(std::as_bytes(std::span(bytes)), path);
}

std::vector<std::byte> serialize_safetensors(
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::unordered_set<std::string> names;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__" || !names.insert(name).second)
      throw Error(ErrorCode::invalid_select,
                  "save_safetensors: the tensor name '" + name + "' is " +
                      (name == "__metadata__" ? "reserved" : "given twice"));
    (void)format_name(t.dtype());
  }
  std::vector<Tensor> values;
  for (const auto& [name, t] : tensors) values.push_back(t);
  eval_all(values);  // one evaluation for all of them
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (std::size_t i = 0; i < metadata.size(); ++i) {
      if (i) header += ',';
      header += detail::json_quote(metadata[i].first);
      header += ':';
      header += detail::json_quote(metadata[i].second);
    }
    header += "}";
  }
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].second;
    const std::uint64_t size = static_cast<std::uint64_t>(t.numel()) * size_of(t.dtype());
    if (i || !metadata.empty()) header += ',';
    header += detail::json_quote(tensors[i].first);
    header += ":{\"dtype\":\"";
    header += format_name(t.dtype());
    header += "\",\"shape\":[";
    for (std::size_t d = 0; d < t.shape().size(); ++d) {
      if (d) header += ',';
      header += std::to_string(t.shape()[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + size) + "]}";
    offset += size;
  }
  header += "}";
  // Padded with spaces so that the data begins 8-byte aligned, as the reference writer does.
  header.append((8 - header.size() % 8) % 8, ' ');
  std::vector<std::byte> out(8 + header.size() + offset);
  const std::uint64_t header_size = header.size();
  std::memcpy(out.data(), &header_size, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::byte* at = out.data() + 8 + header.size();
  for (const auto& [name, t] : tensors) {
    t.copy_to(at, t.dtype());
    at += t.numel() * static_cast<std::int64_t>(size_of(t.dtype()));
  }
  return out;
}

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata) {
  const std::vector<std::byte> bytes = serialize_safetensors(tensors, metadata);
  detail::write_file_atomically(path, {reinterpret_cast<const char*>(bytes.data()), bytes.size()},
                                "save_safetensors");
}

}  // namespace kiln
