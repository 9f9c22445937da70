// NumPy .npy files: the format is NumPy's "NEP 1" (a magic string, a version, a header length,
// a Python dict literal naming descr, fortran_order and shape, then the raw values); what kiln
// reads and writes is summarised in include/kiln/data.hpp.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "data/whole_files.hpp"
#include "graph/narrow_floats.hpp"
#include "kiln/data.hpp"
#include "kiln/error.hpp"
#include "kiln/ops.hpp"

namespace kiln::data {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
constexpr std::size_t kMaxRank = 64;

[[noreturn]] void damaged(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::io_error, "load_npy: " + source + ": " + what);
}

// The header: a Python dict literal with string keys and values that are strings, True/False
// or tuples of integers.
struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Header parse() {
    Header h;
    expect('{');
    while (!peek('}')) {
      const std::string key = string();
      expect(':');
      if (key == "descr") {
        if (!peek('\'') && !peek('"'))
          throw Error(ErrorCode::wrong_type,
                      "load_npy: " + source_ + ": a structured dtype, which kiln does not read");
        h.descr = string();
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        h.has_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        h.has_shape = true;
      } else {
        fail("unknown key '" + key + "'");
      }
      if (!take(',')) break;
    }
    expect('}');
    skip_space();
    if (pos_ != text_.size()) fail("text after the dict");
    if (!h.has_descr || !h.has_order || !h.has_shape)
      fail("the header lacks descr, fortran_order or shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    damaged(source_, "bad header (" + what + " at byte " + std::to_string(pos_) + ")");
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool take(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a string");
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    if (s.find('\\') != std::string::npos) fail("escapes are not part of the format");
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w(word);
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    while (!peek(')')) {
      skip_space();
      const std::size_t start = pos_;
      std::int64_t v = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const int digit = text_[pos_++] - '0';
        if (v > (std::numeric_limits<std::int64_t>::max() - digit) / 10)
          fail("dimension too large");
        v = v * 10 + digit;
      }
      if (pos_ == start) fail("expected a dimension");
      // NumPy 1.x on Windows wrote dimensions as Python 2 longs ("3L").
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      if (shape.size() == kMaxRank) fail("more than " + std::to_string(kMaxRank) + " dimensions");
      shape.push_back(v);
      if (!take(',')) break;
    }
    expect(')');
    return shape;
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

// What a descr's values become: the stored size and kind, and kiln's dtype for them.
struct Stored {
  char kind;  // 'f', 'i', 'u', 'b', 'c'
  std::size_t size;
  bool swap;  // stored big-endian
  DType dtype;
};

Stored stored_of(const std::string& descr, const std::string& source) {
  auto unsupported = [&]() -> Stored {
    throw Error(ErrorCode::wrong_type, "load_npy: " + source + ": dtype '" + descr +
                                           "', which kiln does not read (it reads f2, f4, f8, "
                                           "b1, i1 to i8, u1 to u8, c8, c16)");
  };
  if (descr.size() < 3) return unsupported();
  const char order = descr[0];
  const char kind = descr[1];
  std::size_t size = 0;
  for (std::size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || size > 16) return unsupported();
    size = size * 10 + static_cast<std::size_t>(descr[i] - '0');
  }
  if (order != '<' && order != '>' && order != '|' && order != '=') return unsupported();
  const bool swap = order == '>' && size > 1;
  switch (kind) {
    case 'f':
      if (size == 2) return {kind, size, swap, DType::f16};
      if (size == 4) return {kind, size, swap, DType::f32};
      if (size == 8) return {kind, size, swap, DType::f64};
      break;
    case 'i':
      if (size == 1) return {kind, size, swap, DType::i8};
      if (size == 2) return {kind, size, swap, DType::i16};
      if (size == 4) return {kind, size, swap, DType::i32};
      if (size == 8) return {kind, size, swap, DType::i64};
      break;
    case 'u':
      if (size == 1) return {kind, size, swap, DType::u8};
      if (size == 2) return {kind, size, swap, DType::i32};  // kiln has no u16
      if (size == 4 || size == 8) return {kind, size, swap, DType::i64};
      break;
    case 'b':
      if (size == 1) return {kind, size, swap, DType::boolean};
      break;
    case 'c':  // two floats, each in the file's byte order
      if (size == 8) return {kind, size, order == '>', DType::c64};
      if (size == 16) return {kind, size, order == '>', DType::c128};
      break;
    default: break;
  }
  return unsupported();
}

// Value i of the stored values as kiln's type T.
template <class T>
T value_at(const std::byte* data, std::size_t i, const Stored& s) {
  unsigned char raw[8];
  std::memcpy(raw, data + i * s.size, s.size);
  if (s.swap) std::reverse(raw, raw + s.size);
  std::uint64_t bits = 0;
  std::memcpy(&bits, raw, s.size);  // little-endian host (static_assert below)
  switch (s.kind) {
    case 'f':
      if (s.size == 2) return static_cast<T>(detail::f16_to_f32(static_cast<std::uint16_t>(bits)));
      if (s.size == 4)
        return static_cast<T>(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
      return static_cast<T>(std::bit_cast<double>(bits));
    case 'i': {
      const unsigned shift = 64 - 8 * static_cast<unsigned>(s.size);
      return static_cast<T>(static_cast<std::int64_t>(bits << shift) >> shift);  // sign-extend
    }
    case 'b': return static_cast<T>(bits != 0);
    default: return static_cast<T>(bits);  // 'u'
  }
}

static_assert(std::endian::native == std::endian::little,
              "the npy reader assumes a little-endian host");

const char* descr_of(DType dtype) {
  switch (dtype) {
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::f16: return "<f2";
    case DType::boolean: return "|b1";
    case DType::u8: return "|u1";
    case DType::i8: return "|i1";
    case DType::i16: return "<i2";
    case DType::c64: return "<c8";
    case DType::c128: return "<c16";
    case DType::bf16: break;
  }
  throw Error(ErrorCode::wrong_type, "save_npy: NumPy has no dtype for " +
                                         std::string(dtype_name(dtype)) +
                                         " (convert the tensor to f32 first)");
}

}  // namespace

Tensor parse_npy(std::span<const std::byte> bytes, const std::string& source) {
  if (bytes.size() < kMagicSize + 4 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    damaged(source, "not an npy file (no \\x93NUMPY magic)");
  const auto major = static_cast<unsigned>(bytes[kMagicSize]);
  std::size_t header_size = 0, offset = 0;
  if (major == 1) {
    header_size = static_cast<std::size_t>(bytes[8]) | static_cast<std::size_t>(bytes[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) damaged(source, "truncated header");
    for (int i = 0; i < 4; ++i) header_size |= static_cast<std::size_t>(bytes[8 + i]) << (8 * i);
    offset = 12;
  } else {
    damaged(source, "format version " + std::to_string(major) + " (kiln reads 1 to 3)");
  }
  if (header_size > bytes.size() - offset)
    damaged(source, "the header length " + std::to_string(header_size) + " runs past the end");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + offset, header_size);
  const Header h = HeaderParser(text, source).parse();
  const Stored stored = stored_of(h.descr, source);
  std::uint64_t numel = 1;
  for (std::int64_t d : h.shape) {
    const auto dim = static_cast<std::uint64_t>(d);
    if (dim != 0 && numel > std::numeric_limits<std::uint64_t>::max() / 16 / dim)
      damaged(source, "the shape " + shape_to_string(h.shape) + " is too large");
    numel *= dim;
  }
  const std::span<const std::byte> data = bytes.subspan(offset + header_size);
  if (numel * stored.size != data.size())
    damaged(source, "shape " + shape_to_string(h.shape) + " of " + h.descr + " needs " +
                        std::to_string(numel * stored.size) + " bytes of values, the file has " +
                        std::to_string(data.size()));
  // Fortran order: the values of the transposed array, row-major.
  Shape stored_shape = h.shape;
  if (h.fortran_order) std::reverse(stored_shape.begin(), stored_shape.end());
  const auto n = static_cast<std::size_t>(numel);
  Tensor t;
  auto fill = [&]<class T>() {
    std::vector<T> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = value_at<T>(data.data(), i, stored);
    t = Tensor::from(values, stored_shape);
  };
  switch (stored.dtype) {
    case DType::f16: fill.operator()<Half>(); break;
    case DType::boolean: {
      std::vector<std::uint8_t> values(n);
      for (std::size_t i = 0; i < n; ++i) values[i] = value_at<std::uint8_t>(data.data(), i, stored);
      t = Tensor::from_bytes(values.data(), DType::boolean, stored_shape);
      break;
    }
    case DType::c64:
    case DType::c128: {
      const Stored part{'f', stored.size / 2, stored.swap, real_type(stored.dtype)};
      auto fill_complex = [&]<class R>() {
        std::vector<std::complex<R>> values(n);
        for (std::size_t i = 0; i < n; ++i)
          values[i] = {value_at<R>(data.data(), 2 * i, part), value_at<R>(data.data(), 2 * i + 1, part)};
        t = Tensor::from(values, stored_shape);
      };
      if (stored.dtype == DType::c64) fill_complex.operator()<float>();
      else fill_complex.operator()<double>();
      break;
    }
    case DType::f32: fill.operator()<float>(); break;
    case DType::f64: fill.operator()<double>(); break;
    case DType::i32: fill.operator()<std::int32_t>(); break;
    case DType::u8: fill.operator()<std::uint8_t>(); break;
    case DType::i8: fill.operator()<std::int8_t>(); break;
    case DType::i16: fill.operator()<std::int16_t>(); break;
    default:
      if (stored.kind == 'u' && stored.size == 8)
        for (std::size_t i = 0; i < n; ++i)
          if (value_at<std::uint64_t>(data.data(), i, stored) >
              static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            throw Error(ErrorCode::wrong_type, "load_npy: " + source + ": u8 value " +
                                                   std::to_string(i) + " does not fit in i64");
      fill.operator()<std::int64_t>();
  }
  if (h.fortran_order && h.shape.size() > 1) {
    std::vector<int> reversed(h.shape.size());
    for (std::size_t i = 0; i < reversed.size(); ++i)
      reversed[i] = static_cast<int>(reversed.size() - 1 - i);
    t = permute(t, reversed).contiguous().eval();
  }
  return t;
}

Tensor load_npy(const std::string& path) {
  const std::vector<char> bytes = detail::read_whole_file(path, "load_npy");
  return parse_npy(std::as_bytes(std::span(bytes)), path);
}

std::vector<std::byte> serialize_npy(const Tensor& t) {
  std::string header =
      "{'descr': '" + std::string(descr_of(t.dtype())) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < t.shape().size(); ++i) {
    if (i) header += ", ";
    header += std::to_string(t.shape()[i]);
  }
  if (t.shape().size() == 1) header += ',';  // Python's one-element tuple: (4,)
  header += "), }";
  // Padded with spaces and a newline so that the values begin 64-byte aligned, as NumPy does.
  const std::size_t preamble = kMagicSize + 4;
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xFFFF)
    throw Error(ErrorCode::illegal_dimension,
                "save_npy: the header of shape " + shape_to_string(t.shape()) + " is too long");
  const std::size_t values = static_cast<std::size_t>(t.numel()) * size_of(t.dtype());
  std::vector<std::byte> out(preamble + header.size() + values);
  std::memcpy(out.data(), kMagic, kMagicSize);
  out[6] = std::byte{1};
  out[7] = std::byte{0};
  out[8] = static_cast<std::byte>(header.size() & 0xFF);
  out[9] = static_cast<std::byte>(header.size() >> 8);
  std::memcpy(out.data() + preamble, header.data(), header.size());
  t.copy_to(out.data() + preamble + header.size(), t.dtype());
  return out;
}

void save_npy(const std::string& path, const Tensor& t) {
  const std::vector<std::byte> bytes = serialize_npy(t);
  detail::write_file_atomically(path, {reinterpret_cast<const char*>(bytes.data()), bytes.size()},
                                "save_npy");
}

}  // namespace kiln::data
