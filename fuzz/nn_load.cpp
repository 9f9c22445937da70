// Fuzzes kiln::nn::load: the input is written to a file and loaded into a small fixed model.
// Every failure must be a kiln::Error that leaves the model's parameters as they were; a load
// that succeeds must give parameters of the same shapes.
//
// Input: byte 0 chooses whether the harness repairs the trailing CRC-32 (so that mutations get
// past the checksum into the parser); the rest is the file (fuzz/corpus/nn_load/ holds real
// nn::save output of this model).
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "fuzz_common.hpp"
#include "kiln/error.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn.hpp"
#include "small_model.hpp"

namespace nn = kiln::nn;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<std::uint8_t> file(data + 1, data + size);
  if ((data[0] & 1) && file.size() >= 4) {
    const auto body = static_cast<uInt>(file.size() - 4);
    const auto c = static_cast<std::uint32_t>(crc32(0, file.data(), body));
    for (int i = 0; i < 4; ++i) file[body + i] = static_cast<std::uint8_t>(c >> (8 * i));
  }
  const auto& tmp = kiln_fuzz::scratch();
  tmp.write(file.data(), file.size());

  const auto before = kiln_fuzz::small_model_bits();
  std::vector<kiln::Shape> shapes;
  for (const auto& [name, p] : kiln_fuzz::small_model().named_parameters())
    shapes.push_back(p.shape());
  try {
    nn::load(kiln_fuzz::small_model(), tmp.path());
  } catch (const kiln::Error&) {
    if (kiln_fuzz::small_model_bits() != before) std::abort();  // a failed load changed the model
    return 0;
  }
  std::size_t i = 0;
  for (const auto& [name, p] : kiln_fuzz::small_model().named_parameters()) {
    if (p.shape() != shapes[i++]) std::abort();
    (void)p.value().to_vector<float>();
  }
  return 0;
}
