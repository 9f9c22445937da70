// Fuzzes fload_image (flint.h): the input is written to a file and loaded. A file kiln cannot
// read must give NULL with IO_ERROR (or OUT_OF_MEMORY) and a printable message; an image must be
// an F_FLOAT32 node [height, width, channels] within the pixel limit that executes. kiln's own
// decoders (BMP, TGA, PSD, HDR, PNM) and its glue around libpng, libjpeg-turbo and giflib are
// built with the harness's sanitizers; the three libraries are Debian's builds, whose behaviour
// is checked through what fload_image returns.
#include <cstdint>
#include <cstdlib>

#include "flint.h"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  // A pixel limit of 2^22 keeps an accepted image's memory far inside the fuzzer's budget, so an
  // allocation beyond it is a finding (ASan's max_allocation_size_mb), not a legitimate image.
  setenv("KILN_IMAGE_MAX_PIXELS", "4194304", 1);
  fSetLoggingLevel(F_NO_LOGGING);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& tmp = kiln_fuzz::scratch();
  tmp.write(data, size);
  FGraphNode* img = fload_image(tmp.path().c_str());
  if (img == nullptr) {
    if (fErrorType() != IO_ERROR && fErrorType() != OUT_OF_MEMORY) std::abort();
    for (const char* m = fErrorMessage(); *m != '\0'; ++m)
      if (static_cast<unsigned char>(*m) < 0x20 || static_cast<unsigned char>(*m) > 0x7E)
        std::abort();
    return 0;
  }
  const FOperation& op = img->operation;
  if (op.data_type != F_FLOAT32 || op.dimensions != 3 || op.shape[2] < 1 || op.shape[2] > 4 ||
      op.shape[0] < 1 || op.shape[1] < 1 || op.shape[0] * op.shape[1] > (std::size_t{1} << 22))
    std::abort();
  if (fCalculateResult(img) == nullptr) {
    if (fErrorType() != OUT_OF_MEMORY) std::abort();
  } else {
    const FResultData* r = img->result_data;
    if (r == nullptr || r->num_entries != op.shape[0] * op.shape[1] * op.shape[2]) std::abort();
    const float* v = static_cast<const float*>(r->data);
    float sum = 0;
    for (std::size_t i = 0; i < r->num_entries; ++i) sum += v[i];
    volatile float sink = sum;
    (void)sink;
  }
  fFreeGraph(img);
  return 0;
}
