// Fuzzes kiln::data::read_idx on plain and gzipped files: a bad file must throw kiln::Error,
// and an accepted one must have as many values as its dimensions say.
//
// Input: if byte 0 is odd the rest is gzip-compressed (by the harness, with zlib) before it is
// written to the file, so mutations of the IDX structure reach the gzip path as well.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz_common.hpp"
#include "kiln/data.hpp"
#include "kiln/error.hpp"

namespace {

std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper rather than zlib's.
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(size)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& tmp = kiln_fuzz::scratch();
  if (data[0] & 1) {
    const auto gz = gzip(data + 1, size - 1);
    tmp.write(gz.data(), gz.size());
  } else {
    tmp.write(data + 1, size - 1);
  }
  kiln::data::IdxArray a;
  try {
    a = kiln::data::read_idx(tmp.path());
  } catch (const kiln::Error&) {
    return 0;
  }
  const auto n = a.numel();
  if (n < 0 || a.data.size() != static_cast<std::size_t>(n) * a.element_size()) std::abort();
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += a.value(i);
  volatile double sink = sum;
  (void)sink;
  return 0;
}
