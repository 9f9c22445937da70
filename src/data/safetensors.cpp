// safetensors reading and writing; the format is summarised in include/kiln/safetensors.hpp.
#include "kiln/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "data/json.hpp"
#include "data/whole_files.hpp"
#include "graph/narrow_floats.hpp"
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

// How a stored dtype becomes one of kiln's: as it is, or widened, which loses nothing (each value
// of the narrower type is exactly a value of the wider one; U64 checks each value fits in i64).
enum class Widen : std::uint8_t { none, f8_e5m2, f8_e4m3, u16, u32, u64 };

struct FormatType {
  const char* name;
  std::size_t size;
  DType dtype;  // what kiln reads it as
  Widen widen;
};

// Every dtype of the format.
constexpr FormatType kTypes[] = {
    {"F32", 4, DType::f32, Widen::none},        {"F64", 8, DType::f64, Widen::none},
    {"I32", 4, DType::i32, Widen::none},        {"I64", 8, DType::i64, Widen::none},
    {"F16", 2, DType::f16, Widen::none},        {"BF16", 2, DType::bf16, Widen::none},
    {"F8_E5M2", 1, DType::f32, Widen::f8_e5m2}, {"F8_E4M3", 1, DType::f32, Widen::f8_e4m3},
    {"I8", 1, DType::i8, Widen::none},          {"U8", 1, DType::u8, Widen::none},
    {"BOOL", 1, DType::boolean, Widen::none},   {"I16", 2, DType::i16, Widen::none},
    {"U16", 2, DType::i32, Widen::u16},         {"U32", 4, DType::i64, Widen::u32},
    {"U64", 8, DType::i64, Widen::u64},         {"C64", 8, DType::c64, Widen::none}};

const FormatType* type_named(const std::string& name) {
  for (const FormatType& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

// Element i of little-endian values of type Stored.
template <class Stored> Stored stored_at(std::span<const std::byte> bytes, std::size_t i) {
  Stored v;
  std::memcpy(&v, bytes.data() + i * sizeof(Stored), sizeof(Stored));
  return v;
}

// The tensor of `bytes`, stored as `t`, in kiln's dtype for it.
Tensor widened(std::span<const std::byte> bytes, const FormatType& t, const Shape& shape,
               const std::string& source, const std::string& name) {
  const std::size_t n = bytes.size() / t.size;
  auto widen_all = [&]<class Out>(auto&& element) {
    std::vector<Out> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = element(i);
    return Tensor::from(out, shape);
  };
  switch (t.widen) {
    case Widen::none: break;
    case Widen::f8_e5m2:
      return widen_all.operator()<float>(
          [&](std::size_t i) { return detail::f8_e5m2_to_f32(stored_at<std::uint8_t>(bytes, i)); });
    case Widen::f8_e4m3:
      return widen_all.operator()<float>(
          [&](std::size_t i) { return detail::f8_e4m3_to_f32(stored_at<std::uint8_t>(bytes, i)); });
    case Widen::u16:
      return widen_all.operator()<std::int32_t>(
          [&](std::size_t i) { return std::int32_t{stored_at<std::uint16_t>(bytes, i)}; });
    case Widen::u32:
      return widen_all.operator()<std::int64_t>(
          [&](std::size_t i) { return std::int64_t{stored_at<std::uint32_t>(bytes, i)}; });
    case Widen::u64:
      return widen_all.operator()<std::int64_t>([&](std::size_t i) {
        const std::uint64_t v = stored_at<std::uint64_t>(bytes, i);
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          throw Error(ErrorCode::wrong_type,
                      "load_safetensors: " + source + ": tensor '" + name + "' (U64) holds " +
                          std::to_string(v) + " at element " + std::to_string(i) +
                          ", more than kiln's i64 holds");
        return static_cast<std::int64_t>(v);
      });
  }
  return Tensor::from_bytes(bytes.data(), t.dtype, shape);
}

const char* format_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::boolean: return "BOOL";
    case DType::u8: return "U8";
    case DType::i8: return "I8";
    case DType::i16: return "I16";
    case DType::c64: return "C64";
    case DType::c128: break;
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
    out.tensors.emplace_back(
        e.name, widened(data.subspan(static_cast<std::size_t>(e.begin),
                                     static_cast<std::size_t>(e.end - e.begin)),
                        *e.type, e.shape, source, e.name));
  return out;
}

Safetensors load_safetensors(const std::string& path) {
  const std::vector<char> bytes = detail::read_whole_file(path, "load_safetensors");
  return parse_safetensors(std::as_bytes(std::span(bytes)), path);
}

namespace {

// The name and size a tensor is stored with.
const char* stored_name(DType dtype, StoredFloats floats) {
  if (is_float(dtype) && floats == StoredFloats::f16) return "F16";
  if (is_float(dtype) && floats == StoredFloats::bf16) return "BF16";
  return format_name(dtype);
}
std::uint64_t stored_size(DType dtype, StoredFloats floats) {
  return is_float(dtype) && floats != StoredFloats::as_they_are ? 2 : size_of(dtype);
}

// The tensor's values as 16-bit floats at `at`; nothing past the format's range.
void write_narrowed(const std::string& name, const Tensor& t, StoredFloats floats, std::byte* at) {
  const std::vector<double> values = t.to_vector<double>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double x = values[i];
    const std::uint16_t bits =
        floats == StoredFloats::f16 ? detail::f16_nearest(x) : detail::bf16_nearest(x);
    if (std::isfinite(x) && (bits & 0x7FFF) == (floats == StoredFloats::f16 ? 0x7C00 : 0x7F80))
      throw Error(ErrorCode::wrong_type,
                  "save_safetensors: tensor '" + name + "' holds " + std::to_string(x) +
                      " at element " + std::to_string(i) + ", beyond the range of " +
                      stored_name(t.dtype(), floats));
    std::memcpy(at + 2 * i, &bits, 2);
  }
}

}  // namespace

std::vector<std::byte> serialize_safetensors(
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata, StoredFloats floats) {
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
    const std::uint64_t size = static_cast<std::uint64_t>(t.numel()) * stored_size(t.dtype(), floats);
    if (i || !metadata.empty()) header += ',';
    header += detail::json_quote(tensors[i].first);
    header += ":{\"dtype\":\"";
    header += stored_name(t.dtype(), floats);
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
    if (is_float(t.dtype()) && floats != StoredFloats::as_they_are)
      write_narrowed(name, t, floats, at);
    else
      t.copy_to(at, t.dtype());
    at += t.numel() * static_cast<std::int64_t>(stored_size(t.dtype(), floats));
  }
  return out;
}

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata,
                      StoredFloats floats) {
  const std::vector<std::byte> bytes = serialize_safetensors(tensors, metadata, floats);
  detail::write_file_atomically(path, {reinterpret_cast<const char*>(bytes.data()), bytes.size()},
                                "save_safetensors");
}

}  // namespace kiln
