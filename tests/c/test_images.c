/* fstore_image/fload_image round trips (PNG and BMP exact for 8-bit values, JPEG close) and
 * their errors. Files are written to the working directory (the build's tests/ folder). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

/* An F_FLOAT32 image [h, w, c] whose values are k/255 for varied k. */
static FGraphNode *image(size_t h, size_t w, size_t c, int smooth) {
  const size_t n = h * w * c;
  float *data = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    const size_t y = i / (w * c), x = (i / c) % w, ch = i % c;
    const unsigned k = smooth ? (unsigned)(30 + 6 * y + 5 * x + 20 * ch)
                              : (unsigned)(i * 37 + 11) % 256;
    data[i] = (float)k / 255.0f;
  }
  size_t shape[3] = {h, w, c};
  FGraphNode *node = fCreateGraph(data, (int)n, F_FLOAT32, shape, 3);
  free(data);
  return node;
}

/* Stores `node` in `format`, loads it back and compares (max abs difference <= tol). */
static void round_trip(FGraphNode *node, const char *path, enum FImageFormat format,
                       size_t channels_back, double tol) {
  CHECK(fstore_image(node, path, format) == NO_ERROR);
  FGraphNode *back = fload_image(path);
  CHECK(back != NULL);
  if (back == NULL) return;
  CHECK(back->operation.data_type == F_FLOAT32);
  CHECK(back->operation.dimensions == 3);
  CHECK(back->operation.shape[0] == node->operation.shape[0]);
  CHECK(back->operation.shape[1] == node->operation.shape[1]);
  CHECK(back->operation.shape[2] == channels_back);
  CHECK(fCalculateResult(back) != NULL && fCalculateResult(node) != NULL);
  const size_t pixels = node->operation.shape[0] * node->operation.shape[1];
  const size_t c = node->operation.dimensions == 3 ? node->operation.shape[2] : 1;
  double worst = 0;
  for (size_t p = 0; p < pixels; ++p) {
    for (size_t ch = 0; ch < channels_back && ch < c; ++ch) {
      const double d = fabs(kt_value(back, p * channels_back + ch) - kt_value(node, p * c + ch));
      worst = d > worst ? d : worst;
    }
  }
  CHECK_NEAR(worst, 0, tol);
  fFreeGraph(back);
  remove(path);
}

void test_images(void) {
  FGraphNode *rgb = image(4, 5, 3, 0);
  rgb->reference_counter++;
  /* PNG and BMP are exact for 8-bit values. */
  round_trip(rgb, "kiln_c_test_rgb.png", F_PNG, 3, 0);
  round_trip(rgb, "kiln_c_test_rgb.bmp", F_BMP, 3, 0);
  {
    FGraphNode *rgba = image(3, 2, 4, 0);
    round_trip(rgba, "kiln_c_test_rgba.png", F_PNG, 4, 0);
    fFreeGraph(rgba);
    FGraphNode *gray = image(6, 7, 1, 0);
    round_trip(gray, "kiln_c_test_gray.png", F_PNG, 1, 0);
    fFreeGraph(gray);
    FGraphNode *gray_ga = image(2, 3, 2, 0);
    round_trip(gray_ga, "kiln_c_test_ga.png", F_PNG, 2, 0);
    fFreeGraph(gray_ga);
  }
  {
    /* A 2-D node is a grayscale image. */
    FGraphNode *flat = fflatten_dimension(image(4, 4, 1, 0), 2);
    CHECK_SHAPE(flat, 4, 4);
    CHECK(fstore_image(flat, "kiln_c_test_flat.png", F_PNG) == NO_ERROR);
    FGraphNode *back = fload_image("kiln_c_test_flat.png");
    CHECK_SHAPE(back, 4, 4, 1);
    FGraphNode *diff = freduce_max(fflatten(fabs_g(fsub_g(fflatten(back), fflatten(flat)))), 0);
    CHECK_VALUES(diff, 0, 0);
    fFreeGraph(diff);
    remove("kiln_c_test_flat.png");
  }
  /* JPEG is lossy: close for a smooth image. */
  {
    FGraphNode *smooth = image(16, 16, 3, 1);
    round_trip(smooth, "kiln_c_test_smooth.jpg", F_JPEG, 3, 0.06);
    fFreeGraph(smooth);
  }
  /* Values outside [0, 1] are clamped; other types work too. */
  {
    FGraphNode *wild = KT_NODE(F_FLOAT64, KT_SHAPE(1, 4, 1), -1, 0.5, 2, 1);
    CHECK(fstore_image(wild, "kiln_c_test_clamp.png", F_PNG) == NO_ERROR);
    FGraphNode *back = fload_image("kiln_c_test_clamp.png");
    CHECK_VALUES(back, 0, 0, 128.0f / 255.0f, 1, 1);
    fFreeGraph(back);
    fFreeGraph(wild);
    FGraphNode *ints = KT_NODE(F_INT32, KT_SHAPE(2, 1, 1), 0, 1);
    CHECK(fstore_image(ints, "kiln_c_test_clamp.png", F_PNG) == NO_ERROR);
    back = fload_image("kiln_c_test_clamp.png");
    CHECK_VALUES(back, 0, 0, 1);
    fFreeGraph(back);
    fFreeGraph(ints);
    remove("kiln_c_test_clamp.png");
  }
  /* A computed node is executed before it is written. */
  {
    FGraphNode *dark = fmul_cf(rgb, 0.0f);
    CHECK(fstore_image(dark, "kiln_c_test_dark.bmp", F_BMP) == NO_ERROR);
    CHECK(dark->result_data != NULL);
    FGraphNode *back = fload_image("kiln_c_test_dark.bmp");
    FGraphNode *total = freduce_sum(fflatten(back), 0);
    CHECK_VALUES(total, 0, 0);
    fFreeGraph(total);
    fFreeGraph(dark);
    remove("kiln_c_test_dark.bmp");
  }

  /* Errors. */
  CHECK_ERROR(fstore_image(rgb, "/nonexistent/kiln/out.png", F_PNG) == IO_ERROR, IO_ERROR,
              "fstore_image", "/nonexistent/kiln/out.png");
  CHECK_ERROR(fstore_image(rgb, "kiln_c_test_x.png", (enum FImageFormat)7) == INVALID_SELECT,
              INVALID_SELECT, "fstore_image", "format 7");
  CHECK_ERROR(fstore_image(rgb, NULL, F_PNG) == INVALID_SELECT, INVALID_SELECT, "path is NULL");
  CHECK_ERROR(fstore_image(NULL, "kiln_c_test_x.png", F_PNG) == INVALID_SELECT, INVALID_SELECT,
              "fstore_image");
  {
    FGraphNode *five = image(2, 2, 5, 0);
    CHECK_ERROR(fstore_image(five, "kiln_c_test_x.png", F_PNG) == ILLEGAL_DIMENSION,
                ILLEGAL_DIMENSION, "fstore_image", "channels");
    fFreeGraph(five);
  }
  CHECK_ERROR(fload_image(NULL) == NULL, INVALID_SELECT, "fload_image");
  CHECK_ERROR(fload_image("kiln_c_test_missing.png") == NULL, IO_ERROR, "fload_image",
              "kiln_c_test_missing.png");
  {
    /* A file that is not an image. */
    FILE *text = fopen("kiln_c_test_text.png", "wb");
    CHECK(text != NULL);
    if (text) {
      fputs("this is not an image", text);
      fclose(text);
    }
    CHECK_ERROR(fload_image("kiln_c_test_text.png") == NULL, IO_ERROR, "fload_image");
    remove("kiln_c_test_text.png");
  }
  /* A write that fails (a full device) is an error, not NO_ERROR. */
  {
    FILE *full = fopen("/dev/full", "wb");
    if (full != NULL) {
      fclose(full);
      CHECK_ERROR(fstore_image(rgb, "/dev/full", F_PNG) == IO_ERROR, IO_ERROR, "fstore_image",
                  "/dev/full");
    }
  }
  /* An HDR image of width 0 is an error, not an empty node. */
  {
    FILE *hdr = fopen("kiln_c_test_empty.hdr", "wb");
    CHECK(hdr != NULL);
    if (hdr) {
      fputs("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 3 +X 0\n", hdr);
      fclose(hdr);
    }
    CHECK_ERROR(fload_image("kiln_c_test_empty.hdr") == NULL, IO_ERROR, "fload_image",
                "kiln_c_test_empty.hdr", "width 0");
    remove("kiln_c_test_empty.hdr");
  }
  /* A path with control characters is escaped in the message. */
  CHECK_ERROR(fload_image("kiln_c_test_\033[2J.png") == NULL, IO_ERROR, "fload_image",
              "kiln_c_test_\\x1b[2J.png");
  rgb->reference_counter--;
  fFreeGraph(rgb);
}
