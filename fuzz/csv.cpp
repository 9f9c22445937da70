// Fuzzes kiln::data::parse_csv: a bad text must throw kiln::Error, and an accepted one must give
// a [rows, columns] tensor with a name per column and at most one value per delimiter or line.
//
// Input: byte 0 chooses the value dtype (bits 0-1), the header mode (bits 2-3) and the
// delimiter (bit 4: ';' rather than ','); the rest is the text (fuzz/corpus/csv/).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz_common.hpp"
#include "kiln/data.hpp"
#include "kiln/error.hpp"
#include "kiln/kiln.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  constexpr kiln::DType types[] = {kiln::DType::f32, kiln::DType::f64, kiln::DType::i32,
                                   kiln::DType::i64};
  constexpr kiln::data::CsvOptions::Header headers[] = {
      kiln::data::CsvOptions::Header::automatic, kiln::data::CsvOptions::Header::present,
      kiln::data::CsvOptions::Header::absent, kiln::data::CsvOptions::Header::automatic};
  kiln::data::CsvOptions options;
  options.dtype = types[data[0] & 3];
  options.header = headers[(data[0] >> 2) & 3];
  options.delimiter = (data[0] & 16) ? ';' : ',';
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  kiln::data::CsvTable t;
  try {
    t = kiln::data::parse_csv(text, options);
  } catch (const kiln::Error&) {
    return 0;
  }
  if (t.values.rank() != 2 || static_cast<std::size_t>(t.values.size(1)) != t.columns.size() ||
      static_cast<std::size_t>(t.values.numel()) > 2 * text.size() + 1)
    std::abort();
  volatile double sink = 0;
  for (double v : t.values.to_vector<double>()) sink = sink + v;
  return 0;
}
