#include "data/protobuf_writer.hpp"

#include <bit>
#include <cstring>

namespace kiln::detail {

namespace {
constexpr int kVarint = 0;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;
}  // namespace

void ProtoWriter::varint(std::uint64_t value) {
  while (value >= 0x80) {
    bytes_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  bytes_.push_back(static_cast<char>(value));
}

void ProtoWriter::tag(int field, int wire_type) {
  varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(wire_type));
}

void ProtoWriter::varint_field(int field, std::int64_t value) {
  tag(field, kVarint);
  varint(static_cast<std::uint64_t>(value));
}

void ProtoWriter::float_field(int field, float value) {
  static_assert(std::endian::native == std::endian::little,
                "the wire format's fixed-width fields are little-endian");
  tag(field, kFixed32);
  char raw[sizeof value];
  std::memcpy(raw, &value, sizeof value);
  bytes_.append(raw, sizeof raw);
}

void ProtoWriter::bytes_field(int field, std::string_view bytes) {
  tag(field, kLengthDelimited);
  varint(bytes.size());
  bytes_.append(bytes);
}

void ProtoWriter::packed_varints(int field, std::span<const std::int64_t> values) {
  ProtoWriter run;
  for (const std::int64_t v : values) run.varint(static_cast<std::uint64_t>(v));
  bytes_field(field, run.bytes_);
}

}  // namespace kiln::detail
