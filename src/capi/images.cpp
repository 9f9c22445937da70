// C API: images through kiln::data's readers and writers (kiln/images.hpp): fload_image reads
// PNG, JPEG, GIF, BMP, TGA, PSD, HDR and binary PNM; fstore_image writes PNG, JPEG and BMP.
#include "capi/capi.hpp"
#include "data/images/image_codec.hpp"
#include "kiln/images.hpp"

using namespace kiln;
using namespace kiln::capi;

extern "C" {

FGraphNode* fload_image(const char* path) {
  Call call("fload_image");
  return guarded(call, static_cast<FGraphNode*>(nullptr), [&] {
    call.array(path, "path");
    return make_node(data::read_image(path), FSTORE);
  });
}

FErrorType fstore_image(FGraphNode* node, const char* path, enum FImageFormat format) {
  Call call("fstore_image");
  const bool ok = guarded(call, false, [&] {
    CNode& n = call.node(node, "node");
    call.array(path, "path");
    if (format != F_PNG && format != F_JPEG && format != F_BMP)
      throw CError(INVALID_SELECT, "unknown image format " + std::to_string(static_cast<int>(format)));
    static constexpr data::ImageFormat kFormat[] = {data::ImageFormat::png,
                                                    data::ImageFormat::jpeg,
                                                    data::ImageFormat::bmp};
    data::images::check_writable(n.tensor, kFormat[format], 95);  // before the node executes
    execute(n);  // evaluates only once; safe while other threads execute n
    data::write_image(path, n.tensor, kFormat[format]);
    return true;
  });
  return ok ? NO_ERROR : fErrorType();
}

}  // extern "C"
