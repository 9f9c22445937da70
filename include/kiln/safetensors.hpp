/// @file
/// safetensors files (the format of the Hugging Face ecosystem, PyTorch's `safetensors` package):
/// an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and
/// byte range, then the tensors' bytes, row-major and little-endian.
///
/// kiln writes the dtypes it has (F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL, C64; floats
/// also as F16 or BF16, see StoredFloats) and reads every dtype of the format: its own as they
/// are, the others widened without loss (F8_E4M3, F8_E5M2 to f32; U16 to i32; U32, U64 to i64). A file is checked whole before anything is
/// returned: a damaged header, an unknown dtype, byte ranges that overlap, leave holes or run past
/// the end, or sizes that do not match the shape each throw kiln::Error(io_error), and a U64 value
/// larger than i64 holds throws wrong_type, naming the file, the tensor and the element.
/// nn::save_safetensors / nn::load_safetensors (kiln/nn.hpp) move whole models.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

struct Safetensors {
  std::vector<std::pair<std::string, Tensor>> tensors;        ///< in the order of their bytes
  std::vector<std::pair<std::string, std::string>> metadata;  ///< the header's "__metadata__"

  /// The tensor named `name`; kiln::Error(invalid_select) naming it when there is none.
  const Tensor& at(const std::string& name) const;
  bool contains(const std::string& name) const;
};

Safetensors load_safetensors(const std::string& path);
/// The same from bytes in memory; `source` names them in error messages.
Safetensors parse_safetensors(std::span<const std::byte> bytes,
                              const std::string& source = "safetensors data");

/// How save_safetensors stores floating-point tensors (integer and bool tensors are stored as they
/// are).
enum class StoredFloats : unsigned char {
  as_they_are,  ///< F32 and F64
  f16,          ///< IEEE half (F16), each value rounded to nearest, ties to even
  bf16,         ///< bfloat16 (BF16, as Hugging Face checkpoints often are), rounded the same way
};

/// Writes the tensors (evaluating them) and the metadata; replaces `path` atomically, so a failed
/// write (a full disk) throws kiln::Error(io_error) and leaves an old file whole. Names must be
/// distinct and not "__metadata__". Stored as f16 or bf16, a finite value beyond the format's
/// range (65504 for f16) throws kiln::Error(wrong_type) naming the tensor, the value and its
/// element, and nothing is written.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::vector<std::pair<std::string, std::string>>& metadata = {},
                      StoredFloats floats = StoredFloats::as_they_are);
std::vector<std::byte> serialize_safetensors(
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata = {},
    StoredFloats floats = StoredFloats::as_they_are);

}  // namespace kiln
