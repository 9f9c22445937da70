/* fserialize/fdeserialize: round trips of every type and of large shapes, and rejection of
 * truncated and corrupted bytes (never a crash: buffers are allocated at their exact size, so
 * the sanitizer build catches any read past them). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint32_t crc32_ieee(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static size_t type_size(enum FType t) { return t == F_INT32 || t == F_FLOAT32 ? 4 : 8; }

/* Serializes `node`, reads it back and compares type, shape and values. Frees both. */
static void round_trip(FGraphNode *node) {
  size_t written = 0;
  char *bytes = fserialize(node, &written);
  CHECK(bytes != NULL);
  if (bytes == NULL) {
    fFreeGraph(node);
    return;
  }
  size_t count = 1;
  for (int d = 0; d < node->operation.dimensions; ++d) count *= node->operation.shape[d];
  CHECK(written == 16 + 8 * (size_t)node->operation.dimensions +
                       count * type_size(node->operation.data_type));
  CHECK(memcmp(bytes, "KILN", 4) == 0);
  CHECK(node->result_data != NULL); /* fserialize executed it */

  size_t read = written;
  FGraphNode *back = fdeserialize(bytes, &read);
  CHECK(back != NULL);
  CHECK(read == written);
  if (back != NULL) {
    CHECK(back->operation.op_type == FSTORE);
    CHECK(back->operation.data_type == node->operation.data_type);
    CHECK(back->operation.dimensions == node->operation.dimensions);
    int same_shape = back->operation.dimensions == node->operation.dimensions;
    for (int d = 0; same_shape && d < node->operation.dimensions; ++d)
      same_shape = back->operation.shape[d] == node->operation.shape[d];
    CHECK(same_shape);
    CHECK(fCalculateResult(back) != NULL);
    CHECK(back->result_data->num_entries == count);
    CHECK(count == 0 || memcmp(back->result_data->data, node->result_data->data,
                               count * type_size(node->operation.data_type)) == 0);
    /* Without a size the header is trusted (its checksum verified). */
    size_t unknown = 0;
    FGraphNode *again = fdeserialize(bytes, &unknown);
    CHECK(again != NULL && unknown == written);
    if (again) fFreeGraph(again);
    again = fdeserialize(bytes, NULL);
    CHECK(again != NULL);
    if (again) fFreeGraph(again);
    fFreeGraph(back);
  }
  free(bytes);
  fFreeGraph(node);
}

static void test_round_trips(void) {
  round_trip(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, -2, 3, 2147483647, -2147483647 - 1.0, 0));
  round_trip(KT_NODE(F_INT64, KT_SHAPE(3), 1e15, -7, 0));
  round_trip(KT_NODE(F_FLOAT32, KT_SHAPE(1, 2, 2), 0.1, -1e30, 3.5, 0));
  round_trip(KT_NODE(F_FLOAT64, KT_SHAPE(2), 3.141592653589793, -1e-300));
  {
    /* Values only floats can hold exactly survive bit for bit. */
    double special[] = {1.0 / 3.0, -0.0, 1e308, 5e-324};
    size_t s = 4;
    round_trip(fCreateGraph(special, 4, F_FLOAT64, &s, 1));
  }
  /* Computed nodes are executed first. */
  round_trip(fmul_ci(farange((size_t[]){4, 5}, 2, 1), 3));
  /* Large dimensions (>= 128) of every type. */
  round_trip(frandom((size_t[]){130, 129}, 2));
  round_trip(fconvert(frandom((size_t[]){128, 3}, 2), F_FLOAT32));
  round_trip(farange((size_t[]){3, 200, 2}, 3, 1));
  round_trip(fconvert(farange((size_t[]){1000}, 1, 0), F_INT32));
  round_trip(fconstant_i(-5, (size_t[]){256, 1, 300}, 3));
  /* Many dimensions, and an empty one. */
  round_trip(fconstant_l(9, (size_t[]){1, 2, 1, 3, 1, 2, 1, 1, 2, 1, 1, 1}, 12));
  round_trip(fCreateGraph(NULL, 0, F_FLOAT32, (size_t[]){0, 3}, 2));
}

static void expect_rejected(const unsigned char *bytes, size_t size, const char *why) {
  char *copy = malloc(size);
  memcpy(copy, bytes, size);
  size_t read = size;
  FGraphNode *node = fdeserialize(copy, &read);
  CHECK_ERROR(node == NULL, IO_ERROR, "fdeserialize", why);
  if (node) fFreeGraph(node);
  free(copy);
}

static void test_truncated(void) {
  FGraphNode *node = KT_NODE(F_INT64, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
  size_t total = 0;
  char *bytes = fserialize(node, &total);
  CHECK(bytes != NULL && total == 16 + 16 + 48);
  /* Every prefix, in a buffer of exactly that size. */
  for (size_t n = 1; n < total; ++n) {
    char *cut = malloc(n);
    memcpy(cut, bytes, n);
    size_t read = n;
    FGraphNode *r = fdeserialize(cut, &read);
    CHECK_ERROR(r == NULL, IO_ERROR, "fdeserialize", "truncated");
    if (r) fFreeGraph(r);
    free(cut);
  }
  /* Extra bytes after the node are fine: bytes_read tells where it ended. */
  {
    char *longer = malloc(total + 10);
    memcpy(longer, bytes, total);
    memset(longer + total, 0xAB, 10);
    size_t read = total + 10;
    FGraphNode *r = fdeserialize(longer, &read);
    CHECK(r != NULL && read == total);
    CHECK_VALUES(r, 0, 1, 2, 3, 4, 5, 6);
    if (r) fFreeGraph(r);
    free(longer);
  }
  free(bytes);
  fFreeGraph(node);
}

static void test_bit_flips(void) {
  FGraphNode *node = KT_NODE(F_FLOAT32, KT_SHAPE(2, 2), 1.5, -2, 0.25, 8);
  size_t total = 0;
  unsigned char *bytes = (unsigned char *)fserialize(node, &total);
  CHECK(bytes != NULL && total == 16 + 16 + 16);
  /* Flip every bit of every byte in turn: each gives IO_ERROR or a valid node. */
  int rejected = 0, accepted = 0;
  for (size_t i = 0; i < total; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      unsigned char *copy = malloc(total);
      memcpy(copy, bytes, total);
      copy[i] ^= (unsigned char)(1u << bit);
      size_t read = total;
      FGraphNode *r = fdeserialize((char *)copy, &read);
      if (r == NULL) {
        CHECK(fErrorType() == IO_ERROR);
        ++rejected;
      } else {
        CHECK(fCalculateResult(r) != NULL);
        ++accepted;
        fFreeGraph(r);
      }
      free(copy);
    }
  }
  /* The checksums catch every single-bit flip. */
  CHECK(rejected == (int)total * 8 && accepted == 0);
  /* Whole bytes overwritten in the header, too. */
  for (size_t i = 0; i < 8 + 16 + 4; ++i) {
    unsigned char *copy = malloc(total);
    memcpy(copy, bytes, total);
    copy[i] = (unsigned char)~copy[i];
    size_t read = total;
    FGraphNode *r = fdeserialize((char *)copy, &read);
    CHECK(r == NULL && fErrorType() == IO_ERROR);
    if (r) fFreeGraph(r);
    free(copy);
  }
  free(bytes);
  fFreeGraph(node);
}

/* Builds a header with a valid checksum, so that the field checks themselves are tested. */
static size_t craft(unsigned char *out, const char *magic, unsigned version, unsigned type,
                    unsigned rank, const uint64_t *dims) {
  memcpy(out, magic, 4);
  out[4] = (unsigned char)(version & 0xFF);
  out[5] = (unsigned char)(version >> 8);
  out[6] = (unsigned char)type;
  out[7] = (unsigned char)rank;
  const unsigned r = rank <= 32 ? rank : 0;
  for (unsigned d = 0; d < r; ++d) put_u64(out + 8 + 8 * d, dims[d]);
  put_u32(out + 8 + 8 * r, crc32_ieee(out, 8 + 8 * r));
  return 12 + 8 * r;
}

static void test_corrupt_fields(void) {
  unsigned char buf[512];
  uint64_t dims[33];
  for (int i = 0; i < 33; ++i) dims[i] = 1;
  size_t n;
  memset(buf, 0, sizeof buf);

  n = craft(buf, "KILM", 1, 0, 1, dims);
  expect_rejected(buf, n + 8, "magic");
  n = craft(buf, "KILN", 2, 0, 1, dims);
  expect_rejected(buf, n + 8, "version 2");
  n = craft(buf, "KILN", 0, 0, 1, dims);
  expect_rejected(buf, n + 8, "version 0");
  n = craft(buf, "KILN", 1, 4, 1, dims);
  expect_rejected(buf, n + 8, "data type 4");
  n = craft(buf, "KILN", 1, 0, 0, dims);
  expect_rejected(buf, n + 8, "rank 0");
  n = craft(buf, "KILN", 1, 0, 33, dims);
  expect_rejected(buf, 300, "rank 33");

  /* Sizes that overflow. */
  {
    uint64_t big[2] = {(uint64_t)1 << 40, (uint64_t)1 << 40};
    n = craft(buf, "KILN", 1, 3, 2, big);
    expect_rejected(buf, n + 8, "too large");
    uint64_t negative[1] = {UINT64_MAX};
    n = craft(buf, "KILN", 1, 0, 1, negative);
    expect_rejected(buf, n + 8, "too large");
    uint64_t wrap[2] = {(uint64_t)1 << 61, 8};
    n = craft(buf, "KILN", 1, 1, 2, wrap);
    expect_rejected(buf, n + 8, "too large");
  }
  /* A valid header whose data is missing: the dims claim more than the buffer holds. */
  {
    uint64_t many[1] = {1000};
    n = craft(buf, "KILN", 1, 2, 1, many);
    expect_rejected(buf, n + 100, "truncated");
  }
  /* A valid header and data with a wrong data checksum. */
  {
    uint64_t two[1] = {2};
    n = craft(buf, "KILN", 1, 0, 1, two);
    memset(buf + n, 0, 8);
    put_u32(buf + n + 8, 12345);
    expect_rejected(buf, n + 12, "checksum");
    put_u32(buf + n + 8, crc32_ieee(buf + n, 8));
    size_t read = n + 12;
    FGraphNode *ok = fdeserialize((char *)buf, &read);
    CHECK(ok != NULL && read == n + 12);
    CHECK_VALUES(ok, 0, 0, 0);
    if (ok) fFreeGraph(ok);
  }
  CHECK_ERROR(fdeserialize(NULL, NULL) == NULL, INVALID_SELECT, "fdeserialize");
}

void test_serialization(void) {
  test_round_trips();
  test_truncated();
  test_bit_flips();
  test_corrupt_fields();
}
