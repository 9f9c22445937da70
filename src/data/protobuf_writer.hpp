// The protocol buffers wire format, written: the few encodings kiln's ONNX export needs (varint,
// 32-bit, length-delimited and packed repeated fields). Messages are built inside out: a nested
// message is a writer of its own whose bytes become a length-delimited field of its parent.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kiln::detail {

class ProtoWriter {
 public:
  // int32/int64/enum/bool fields: negative values take ten bytes (two's complement), as
  // protobuf writes them.
  void varint_field(int field, std::int64_t value);
  void float_field(int field, float value);
  // string, bytes and nested message fields.
  void bytes_field(int field, std::string_view bytes);
  void message_field(int field, const ProtoWriter& message) { bytes_field(field, message.bytes_); }
  // A repeated int64 field, packed (one length-delimited run of varints).
  void packed_varints(int field, std::span<const std::int64_t> values);

  const std::string& bytes() const { return bytes_; }

 private:
  void tag(int field, int wire_type);
  void varint(std::uint64_t value);

  std::string bytes_;
};

}  // namespace kiln::detail
