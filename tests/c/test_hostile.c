/* Hostile calls: every function of flint.h with arguments a careless or malicious caller might
 * pass (NULL and freed nodes, NULL arrays, zero, negative and huge sizes, counts that do not
 * match, axes out of range, windows larger than the node, zero steps, non-permutations, index
 * nodes of the wrong type or shape, steps and offsets near LONG_MAX/LONG_MIN and INT64_MAX).
 * Each call must give its result or NULL (or its error code) with the right error type, and
 * never crash, overflow or leak; this file runs under ASan + UBSan in the sanitizer build. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

void test_hostile(void);

/* ---- helpers ------------------------------------------------------------------------------- */

/* Sets an error no check below expects, so that a call that fails without setting its own
 * error is caught (the error state otherwise keeps the previous error). */
static void arm(FErrorType expected) {
  if (expected == IO_ERROR)
    fSetLoggingLevel((enum FLogType)99); /* INVALID_SELECT, from fSetLoggingLevel */
  else
    (void)fload_image("/nonexistent/kiln-arm.png"); /* IO_ERROR */
}

/* `r` must be NULL with error `code` (or `code2`, where two types are defensible) and a message
 * naming `fn`. A node returned by mistake is reported and freed. */
static void expect_null(const char *file, int line, FGraphNode *r, FErrorType code,
                        FErrorType code2, const char *fn) {
  char msg[512];
  if (r != NULL) {
    ++kt_checks;
    int k = snprintf(msg, sizeof msg, "%s accepted a hostile call: got a node of shape [", fn);
    for (int d = 0; d < r->operation.dimensions && k < 400; ++d)
      k += snprintf(msg + k, sizeof msg - (size_t)k, d ? ",%zu" : "%zu", r->operation.shape[d]);
    snprintf(msg + k, sizeof msg - (size_t)k, "]");
    kt_fail(file, line, msg);
    fFreeGraph(r);
    return;
  }
  {
    const char *parts[] = {fn};
    const FErrorType got = fErrorType();
    kt_check_error(file, line, 1, got == code2 ? code2 : code, parts, 1);
  }
}
#define EXPECT_NULL(call, code, fn) \
  (arm(code), expect_null(__FILE__, __LINE__, (call), (code), (code), (fn)))
#define EXPECT_NULL2(call, code, code2, fn) \
  (arm(code), expect_null(__FILE__, __LINE__, (call), (code), (code2), (fn)))

/* For functions returning an FErrorType. */
#define EXPECT_CODE(call, code, fn)                                   \
  do {                                                                \
    const char *kt_fn_[] = {(fn)};                                    \
    arm(code);                                                        \
    kt_check_error(__FILE__, __LINE__, (call) == (code), (code), kt_fn_, 1); \
  } while (0)

/* For functions returning nothing: the statement must set `code`. */
#define EXPECT_VOID(stmt, code, fn)                                   \
  do {                                                                \
    const char *kt_fn_[] = {(fn)};                                    \
    arm(code);                                                        \
    stmt;                                                             \
    kt_check_error(__FILE__, __LINE__, 1, (code), kt_fn_, 1);         \
  } while (0)

/* `r` is a node; it is executed, compared with `expected` (`n` values) and freed. */
static void expect_values(const char *file, int line, FGraphNode *r, const double *expected,
                          size_t n) {
  kt_check_values(file, line, r, expected, n, 0.0);
  if (r != NULL) fFreeGraph(r);
}
#define EXPECT_VALUES(call, ...)                                                          \
  do {                                                                                    \
    const double kt_e_[] = {__VA_ARGS__};                                                 \
    expect_values(__FILE__, __LINE__, (call), kt_e_, sizeof kt_e_ / sizeof kt_e_[0]);     \
  } while (0)

/* `r` is a node whose element count cannot be allocated: NULL with OUT_OF_MEMORY when it is
 * built, or a node whose execution fails with OUT_OF_MEMORY. */
static void expect_oom(const char *file, int line, FGraphNode *r, const char *fn) {
  if (r == NULL) {
    const char *parts[] = {fn};
    kt_check_error(file, line, 1, OUT_OF_MEMORY, parts, 1);
    return;
  }
  {
    const char *parts[] = {"fExecuteGraph"};
    arm(OUT_OF_MEMORY);
    kt_check_error(file, line, fExecuteGraph(r) == NULL, OUT_OF_MEMORY, parts, 1);
    fFreeGraph(r);
  }
}
#define EXPECT_OOM(call, fn) (arm(OUT_OF_MEMORY), expect_oom(__FILE__, __LINE__, (call), (fn)))

static FGraphNode *keep(FGraphNode *n) {
  if (n != NULL) n->reference_counter++;
  return n;
}
static void release(FGraphNode *n) {
  if (n == NULL) return;
  n->reference_counter--;
  fFreeGraph(n);
}

/* A node that was freed: the registry of live nodes no longer knows it. */
static FGraphNode *freed_node(void) {
  size_t s[] = {2};
  FGraphNode *n = fconstant_i(1, s, 1);
  fFreeGraph(n);
  return n;
}

#define KT_SZ(x) ((size_t)(x))
static const size_t P40 = (size_t)1 << 40;
static const size_t P32 = (size_t)1 << 32;
static const size_t I64MAX = (size_t)INT64_MAX;

/* CRC-32 (IEEE 802.3, reflected), as fserialize writes it. */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}
static void put_le(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* A serialized header of `rank` dims with a correct header checksum, then `values` bytes of
 * values and their checksum. Returns the size written to `buf`. */
static size_t serialized(unsigned char *buf, int type, int rank, const uint64_t *dims,
                         const unsigned char *values, size_t nvalues) {
  memcpy(buf, "KILN", 4);
  put_le(buf + 4, 1, 2);
  buf[6] = (unsigned char)type;
  buf[7] = (unsigned char)rank;
  for (int d = 0; d < rank; ++d) put_le(buf + 8 + 8 * d, dims[d], 8);
  {
    const size_t h = 8 + 8 * (size_t)rank;
    put_le(buf + h, crc32_of(buf, h), 4);
    if (nvalues > 0) memcpy(buf + h + 4, values, nvalues);
    put_le(buf + h + 4 + nvalues, crc32_of(buf + h + 4, nvalues), 4);
    return h + 8 + nvalues;
  }
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f == NULL) return;
  if (n > 0) CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

/* ---- backends, logging, errors, eager mode ------------------------------------------------- */

static void hostile_backends(void) {
  EXPECT_CODE(flintInit(0), INVALID_SELECT, "flintInit");
  EXPECT_CODE(flintInit(-1), INVALID_SELECT, "flintInit");
  EXPECT_CODE(flintInit(INT_MAX), INVALID_SELECT, "flintInit");
  EXPECT_CODE(flintInit(INT_MIN), INVALID_SELECT, "flintInit");
  if (!kt_have_gpu()) {
    EXPECT_CODE(flintInit(FLINT_BACKEND_ONLY_GPU), OCL_ERROR, "flintInit");
    EXPECT_CODE(flintInit_gpu(), OCL_ERROR, "flintInit_gpu");
  }
  CHECK(flintCleanup_gpu() == NO_ERROR);
  CHECK(flintCleanup_cpu() == NO_ERROR);
  CHECK(flintCleanup() == NO_ERROR); /* twice in a row */
  CHECK(flintInitializedBackends() == 0);
  CHECK(flintInit_cpu() == NO_ERROR);
  CHECK(flintInitializedBackends() == FLINT_BACKEND_ONLY_CPU);

  EXPECT_VOID(fSetLoggingLevel((enum FLogType)6), INVALID_SELECT, "fSetLoggingLevel");
  EXPECT_VOID(fSetLoggingLevel((enum FLogType)-1), INVALID_SELECT, "fSetLoggingLevel");
  EXPECT_VOID(fSetLoggingLevel((enum FLogType)INT_MIN), INVALID_SELECT, "fSetLoggingLevel");
  EXPECT_VOID(fSetLoggingLevel((enum FLogType)INT_MAX), INVALID_SELECT, "fSetLoggingLevel");
  /* Logging stays off: none of these print, and none crash. */
  flogging(F_ERROR, NULL);
  flogging((enum FLogType)-7, "never shown");
  flogging((enum FLogType)INT_MAX, NULL);
  CHECK(fErrorMessage() != NULL);

  /* Eager mode with a failing call: the error is the call's, nothing is executed. */
  fEnableEagerExecution();
  fEnableEagerExecution();
  CHECK(fIsEagerExecution() == 1);
  EXPECT_NULL(fneg(NULL), INVALID_SELECT, "fneg");
  {
    size_t big[] = {P40, P40};
    EXPECT_NULL(fconstant_i(1, big, 2), OUT_OF_MEMORY, "fconstant_i");
    size_t huge[] = {(size_t)1 << 20, (size_t)1 << 20, (size_t)1 << 12};
    /* Legal but not allocatable: eager execution fails cleanly. */
    EXPECT_NULL(fconstant_d(1.0, huge, 3), OUT_OF_MEMORY, "fconstant_d");
  }
  fDisableEagerExecution();
  fDisableEagerExecution();
  CHECK(fIsEagerExecution() == 0);
}

/* ---- creating and freeing ------------------------------------------------------------------ */

static void hostile_creation(void) {
  const float data[4] = {1, 2, 3, 4};
  {
    size_t s[] = {2};
    EXPECT_NULL(fCreateGraph(NULL, 2, F_FLOAT32, s, 1), INVALID_SELECT, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, 2, F_FLOAT32, NULL, 1), INVALID_SELECT, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, 2, F_FLOAT32, s, 0), ILLEGAL_DIMENSIONALITY, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, 2, F_FLOAT32, s, -1), ILLEGAL_DIMENSIONALITY, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, 2, F_FLOAT32, s, INT_MIN), ILLEGAL_DIMENSIONALITY,
                "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, -1, F_FLOAT32, s, 1), ILLEGAL_DIMENSION, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, INT_MIN, F_FLOAT32, s, 1), ILLEGAL_DIMENSION, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, 3, F_FLOAT32, s, 1), INCOMPATIBLE_SHAPES, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, 2, (enum FType)4, s, 1), WRONG_TYPE, "fCreateGraph");
    EXPECT_NULL(fCreateGraph(data, 2, (enum FType)INT_MIN, s, 1), WRONG_TYPE, "fCreateGraph");
  }
  {
    size_t s[] = {SIZE_MAX};
    EXPECT_NULL(fCreateGraph(data, 1, F_FLOAT32, s, 1), ILLEGAL_DIMENSION, "fCreateGraph");
    size_t above[] = {(size_t)INT64_MAX + 1};
    EXPECT_NULL(fCreateGraph(data, 1, F_FLOAT32, above, 1), ILLEGAL_DIMENSION, "fCreateGraph");
    /* The entries cannot fill these shapes (whose sizes do not even exist). */
    size_t over[] = {P40, P40};
    EXPECT_NULL2(fCreateGraph(data, 1, F_FLOAT32, over, 2), INCOMPATIBLE_SHAPES, OUT_OF_MEMORY,
                 "fCreateGraph");
    /* 2^32 * 2^32 wraps to 0 in 64 bits: it must not pass for an empty shape. */
    size_t wraps[] = {P32, P32};
    EXPECT_NULL2(fCreateGraph(data, 0, F_FLOAT32, wraps, 2), INCOMPATIBLE_SHAPES, OUT_OF_MEMORY,
                 "fCreateGraph");
    /* A 0 among the sizes must not hide the overflow of the others. */
    size_t hidden[] = {P40, P40, 0};
    EXPECT_NULL2(fCreateGraph(data, 0, F_FLOAT32, hidden, 3), OUT_OF_MEMORY, INCOMPATIBLE_SHAPES,
                 "fCreateGraph");
  }

  /* fconstant_*, frandom, farange */
  {
    size_t ok[] = {2, 2};
    size_t over[] = {P40, P40};
    size_t hidden[] = {P40, P40, 0};
    size_t wraps[] = {P32, P32, 1};
    size_t max1[] = {SIZE_MAX};
    size_t max2[] = {I64MAX, 2};
    EXPECT_NULL(fconstant_i(1, NULL, 2), INVALID_SELECT, "fconstant_i");
    EXPECT_NULL(fconstant_l(1, ok, 0), ILLEGAL_DIMENSIONALITY, "fconstant_l");
    EXPECT_NULL(fconstant_f(1, ok, -5), ILLEGAL_DIMENSIONALITY, "fconstant_f");
    EXPECT_NULL(fconstant_d(1, max1, 1), ILLEGAL_DIMENSION, "fconstant_d");
    EXPECT_NULL(fconstant_i(1, over, 2), OUT_OF_MEMORY, "fconstant_i");
    EXPECT_NULL(fconstant_l(1, wraps, 3), OUT_OF_MEMORY, "fconstant_l");
    EXPECT_NULL(fconstant_f(1, max2, 2), OUT_OF_MEMORY, "fconstant_f");
    EXPECT_NULL(fconstant_d(1, hidden, 3), OUT_OF_MEMORY, "fconstant_d"); 
    EXPECT_NULL(frandom(NULL, 1), INVALID_SELECT, "frandom");
    EXPECT_NULL(frandom(ok, 0), ILLEGAL_DIMENSIONALITY, "frandom");
    EXPECT_NULL(frandom(over, 2), OUT_OF_MEMORY, "frandom");
    EXPECT_NULL(frandom(hidden, 3), OUT_OF_MEMORY, "frandom"); 
    EXPECT_NULL(farange(NULL, 2, 0), INVALID_SELECT, "farange");
    EXPECT_NULL(farange(ok, 2, 2), ILLEGAL_DIMENSION, "farange");
    EXPECT_NULL(farange(ok, 2, -3), ILLEGAL_DIMENSION, "farange");
    EXPECT_NULL(farange(ok, 2, INT_MAX), ILLEGAL_DIMENSION, "farange");
    EXPECT_NULL(farange(ok, 2, INT_MIN), ILLEGAL_DIMENSION, "farange");
    EXPECT_NULL(farange(over, 2, 0), OUT_OF_MEMORY, "farange");
    EXPECT_NULL(farange(hidden, 3, 0), OUT_OF_MEMORY, "farange"); 
    /* The largest single size is legal (nothing is allocated) but cannot be executed. */
    {
      size_t one[] = {I64MAX};
      EXPECT_OOM(fconstant_i(7, one, 1), "fconstant_i");
      EXPECT_OOM(frandom(one, 1), "frandom");
      EXPECT_OOM(farange(one, 1, 0), "farange");
    }
    /* Empty shapes are fine. */
    {
      size_t empty[] = {0, 3};
      FGraphNode *e = fconstant_i(1, empty, 2);
      CHECK_SHAPE(e, 0, 3);
      CHECK(fCalculateResult(e) != NULL && e->result_data->num_entries == 0);
      fFreeGraph(e);
    }
  }

  /* fFreeGraph: NULL, freed and foreign pointers are detected. */
  EXPECT_VOID(fFreeGraph(NULL), INVALID_SELECT, "fFreeGraph");
  {
    FGraphNode *gone = freed_node();
    EXPECT_VOID(fFreeGraph(gone), INVALID_SELECT, "fFreeGraph");
  }
  {
    FGraphNode fake;
    memset(&fake, 0, sizeof fake);
    EXPECT_VOID(fFreeGraph(&fake), INVALID_SELECT, "fFreeGraph");
  }
}

/* ---- execution, gradients, memory ---------------------------------------------------------- */

static void hostile_execution(FGraphNode *f) {
  FGraphNode *gone = freed_node();
  EXPECT_NULL(fExecuteGraph(gone), INVALID_SELECT, "fExecuteGraph");
  EXPECT_NULL(fExecuteGraph_cpu(NULL), INVALID_SELECT, "fExecuteGraph_cpu");
  EXPECT_NULL(fExecuteGraph_cpu(gone), INVALID_SELECT, "fExecuteGraph_cpu");
  EXPECT_NULL(fExecuteGraph_cpu_eagerly(NULL), INVALID_SELECT, "fExecuteGraph_cpu_eagerly");
  EXPECT_NULL(fExecuteGraph_cpu_eagerly(gone), INVALID_SELECT, "fExecuteGraph_cpu_eagerly");
  /* A NULL node is INVALID_SELECT, as everywhere; a node asks for the missing GPU backend. */
  EXPECT_NULL(fExecuteGraph_gpu(NULL), INVALID_SELECT, "fExecuteGraph_gpu");
  EXPECT_NULL(fExecuteGraph_gpu_eagerly(NULL), INVALID_SELECT, "fExecuteGraph_gpu_eagerly");
  if (!kt_have_gpu()) {
    EXPECT_NULL(fExecuteGraph_gpu(f), OCL_ERROR, "fExecuteGraph_gpu");
    EXPECT_NULL(fExecuteGraph_gpu_eagerly(f), OCL_ERROR, "fExecuteGraph_gpu_eagerly");
  }
  EXPECT_NULL(fCalculateResult(gone), INVALID_SELECT, "fCalculateResult");
  arm(INVALID_SELECT);
  CHECK(fSyncMemory(gone) == NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fSyncMemory");
  {
    /* Not executed yet: NULL, and not an error. */
    FGraphNode *lazy = fneg(f);
    arm(INVALID_SELECT);
    CHECK(fSyncMemory(lazy) == NULL);
    CHECK(fErrorType() == IO_ERROR); /* still the armed error: fSyncMemory set none */
    fFreeGraph(lazy);
  }

  /* Gradients */
  EXPECT_NULL(fCalculateGradient(f, NULL), INVALID_SELECT, "fCalculateGradient");
  EXPECT_NULL(fCalculateGradient(gone, f), INVALID_SELECT, "fCalculateGradient");
  EXPECT_NULL(fCalculateGradient(f, gone), INVALID_SELECT, "fCalculateGradient");
  fStopGradientContext(); /* none open: nothing happens */
  CHECK(!fIsGradientContext());
  {
    FGraphNode *x = keep(fconstant_f(2.0f, (size_t[]){3}, 1));
    FGraphNode *y;
    FGraphNode *out[2] = {NULL, NULL};
    FGraphNode *dx[2];
    fMarkGradientVariable(x);
    fStartGradientContext();
    y = keep(fmul_g(x, x));
    fStopGradientContext();
    dx[0] = x;
    dx[1] = NULL;
    EXPECT_NULL(fCalculateGradient(y, f), ILLEGAL_DERIVE, "fCalculateGradient"); /* not marked */
    EXPECT_NULL(fCalculateGradient(f, x), ILLEGAL_DERIVE, "fCalculateGradient"); /* no context */
    EXPECT_CODE(fCalculateGradients(NULL, dx, 1, out), INVALID_SELECT, "fCalculateGradients");
    EXPECT_CODE(fCalculateGradients(y, NULL, 1, out), INVALID_SELECT, "fCalculateGradients");
    EXPECT_CODE(fCalculateGradients(y, dx, 1, NULL), INVALID_SELECT, "fCalculateGradients");
    EXPECT_CODE(fCalculateGradients(y, dx, 2, out), INVALID_SELECT, "fCalculateGradients");
    CHECK(out[0] == NULL && out[1] == NULL); /* nothing written on error */
    dx[1] = gone;
    EXPECT_CODE(fCalculateGradients(y, dx, 2, out), INVALID_SELECT, "fCalculateGradients");
    dx[1] = f;
    EXPECT_CODE(fCalculateGradients(y, dx, 2, out), ILLEGAL_DERIVE, "fCalculateGradients");
    CHECK(out[0] == NULL && out[1] == NULL);
    CHECK(fCalculateGradients(y, NULL, 0, NULL) == NO_ERROR); /* zero gradients: nothing to do */
    EXPECT_VOID(fMarkGradientVariable(gone), INVALID_SELECT, "fMarkGradientVariable");
    EXPECT_VOID(fUnmarkGradientVariable(gone), INVALID_SELECT, "fUnmarkGradientVariable");
    /* The same variable twice is fine. */
    dx[1] = x;
    CHECK(fCalculateGradients(y, dx, 2, out) == NO_ERROR);
    if (out[0] != NULL && out[1] != NULL) {
      CHECK_VALUES(out[0], 0, 4, 4, 4);
      CHECK_VALUES(out[1], 0, 4, 4, 4);
      fFreeGraph(out[0]);
      fFreeGraph(out[1]);
    }
    fUnmarkGradientVariable(x);
    release(y);
    release(x);
  }

  /* Memory and broadcasting marks */
  EXPECT_NULL(fOptimizeMemory(gone), INVALID_SELECT, "fOptimizeMemory");
  EXPECT_VOID(fEnforceInverseBroadcasting(gone), INVALID_SELECT, "fEnforceInverseBroadcasting");
  EXPECT_VOID(fUnenforceInverseBroadcasting(gone), INVALID_SELECT,
              "fUnenforceInverseBroadcasting");
  {
    /* Not executed: left as it is. */
    FGraphNode *lazy = fneg(f);
    CHECK(fOptimizeMemory(lazy) == lazy);
    CHECK(lazy->num_predecessor == 1);
    fFreeGraph(lazy);
  }
}

/* ---- serialization and images -------------------------------------------------------------- */

static void hostile_serialization(FGraphNode *f) {
  unsigned char buf[512];
  const unsigned char four[4] = {1, 2, 3, 4};
  size_t n;
  FGraphNode *gone = freed_node();
  arm(INVALID_SELECT);
  CHECK(fserialize(NULL, &n) == NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fserialize");
  arm(INVALID_SELECT);
  CHECK(fserialize(gone, NULL) == NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fserialize");
  {
    /* Serializing executes: a size that cannot be allocated is OUT_OF_MEMORY. */
    size_t huge[] = {(size_t)1 << 20, (size_t)1 << 20, (size_t)1 << 12};
    FGraphNode *lazy = fconstant_d(1.0, huge, 3);
    arm(OUT_OF_MEMORY);
    CHECK(fserialize(lazy, &n) == NULL);
    CHECK_ERROR(1, OUT_OF_MEMORY, "fserialize");
    fFreeGraph(lazy);
  }
  n = 16;
  EXPECT_NULL(fdeserialize(NULL, &n), INVALID_SELECT, "fdeserialize");
  {
    /* A valid buffer, then damaged copies of it. */
    const uint64_t dims1[] = {1};
    size_t size = serialized(buf, 0 /* F_INT32 */, 1, dims1, four, 4);
    size_t avail;
    FGraphNode *ok;
    avail = size;
    ok = fdeserialize((char *)buf, &avail);
    CHECK(ok != NULL && avail == size);
    if (ok != NULL) EXPECT_VALUES(ok, 0x04030201);
    /* Every truncation, with the true size given. */
    for (size_t cut = 1; cut < size; ++cut) {
      avail = cut;
      EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    }
    /* Every single-bit flip of the header and values (the checksums catch each). */
    for (size_t at = 0; at < size; ++at) {
      buf[at] ^= 0x10;
      avail = size;
      EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
      buf[at] ^= 0x10;
    }
  }
  {
    /* Headers with correct checksums but impossible contents. */
    const uint64_t over[] = {P40, P40};
    const uint64_t hidden[] = {P40, P40, 0};
    const uint64_t wraps[] = {P32, P32};
    const uint64_t above[] = {(uint64_t)INT64_MAX + 1};
    const uint64_t max[] = {UINT64_MAX};
    const uint64_t big1[] = {I64MAX};
    const uint64_t one[] = {1};
    size_t size, avail;
    uint64_t dims33[33];
    for (int d = 0; d < 33; ++d) dims33[d] = 1;
    size = serialized(buf, 0, 2, over, NULL, 0);
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    size = serialized(buf, 0, 2, wraps, NULL, 0);
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    /* A 0 among the sizes must not hide the overflow of the others. */
    size = serialized(buf, 0, 3, hidden, NULL, 0);
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    size = serialized(buf, 0, 1, above, NULL, 0);
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    size = serialized(buf, 0, 1, max, NULL, 0);
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    /* The header claims more values than the buffer holds. */
    size = serialized(buf, 3, 1, big1, NULL, 0);
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    size = serialized(buf, 0, 0, one, NULL, 0); /* rank 0 */
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    size = serialized(buf, 0, 33, dims33, four, 4); /* rank 33 */
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    size = serialized(buf, 4, 1, one, four, 4); /* no such type */
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
    size = serialized(buf, 0, 1, one, four, 4);
    put_le(buf + 4, 2, 2); /* another version (checksum made to fit) */
    put_le(buf + 16, crc32_of(buf, 16), 4);
    avail = size;
    EXPECT_NULL(fdeserialize((char *)buf, &avail), IO_ERROR, "fdeserialize");
  }
  {
    /* A real serialization read back with the size taken from the header. */
    char *bytes = fserialize(f, &n);
    size_t avail = 0;
    FGraphNode *back;
    CHECK(bytes != NULL);
    back = fdeserialize(bytes, &avail);
    CHECK(back != NULL && avail == n);
    if (back != NULL) EXPECT_VALUES(back, 1, 2, 3, 4, 5, 6);
    free(bytes);
  }

  /* Images */
  EXPECT_NULL(fload_image(NULL), INVALID_SELECT, "fload_image");
  EXPECT_NULL(fload_image(""), IO_ERROR, "fload_image");
  EXPECT_NULL(fload_image("."), IO_ERROR, "fload_image");
  EXPECT_NULL(fload_image("/nonexistent/kiln/x.png"), IO_ERROR, "fload_image");
  write_file("hostile-empty.png", "", 0);
  EXPECT_NULL(fload_image("hostile-empty.png"), IO_ERROR, "fload_image");
  {
    /* A PNG signature and a header claiming 2^31-1 x 2^31-1 pixels, then nothing. */
    const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13,
                                 'I',  'H', 'D', 'R', 0x7F, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF,
                                 0xFF, 0xFF, 8, 6, 0, 0, 0, 0, 0, 0, 0};
    write_file("hostile-huge.png", png, sizeof png);
    EXPECT_NULL(fload_image("hostile-huge.png"), IO_ERROR, "fload_image");
    /* A BMP header claiming a huge image with no pixels. */
    unsigned char bmp[54];
    memset(bmp, 0, sizeof bmp);
    bmp[0] = 'B';
    bmp[1] = 'M';
    put_le(bmp + 2, sizeof bmp, 4);
    put_le(bmp + 10, 54, 4);
    put_le(bmp + 14, 40, 4);
    put_le(bmp + 18, 0x7FFFFFFF, 4);
    put_le(bmp + 22, 0x7FFFFFFF, 4);
    put_le(bmp + 26, 1, 2);
    put_le(bmp + 28, 24, 2);
    write_file("hostile-huge.bmp", bmp, sizeof bmp);
    EXPECT_NULL(fload_image("hostile-huge.bmp"), IO_ERROR, "fload_image");
  }
  {
    FGraphNode *gone2 = freed_node();
    FGraphNode *five = keep(fconstant_f(0.5f, (size_t[]){2, 2, 5}, 3));
    FGraphNode *none = keep(fconstant_f(0.5f, (size_t[]){2, 2, 0}, 3));
    FGraphNode *flat = keep(fconstant_f(0.5f, (size_t[]){4}, 1));
    FGraphNode *four_d = keep(fconstant_f(0.5f, (size_t[]){1, 2, 2, 3}, 4));
    FGraphNode *empty = keep(fconstant_f(0.5f, (size_t[]){0, 2, 3}, 3));
    FGraphNode *huge = keep(fconstant_f(0.5f, (size_t[]){P40, 2, 3}, 3));
    FGraphNode *wide = keep(fconstant_f(0.5f, (size_t[]){1, 70000, 3}, 3));
    EXPECT_CODE(fstore_image(NULL, "x.png", F_PNG), INVALID_SELECT, "fstore_image");
    EXPECT_CODE(fstore_image(gone2, "x.png", F_PNG), INVALID_SELECT, "fstore_image");
    EXPECT_CODE(fstore_image(f, NULL, F_PNG), INVALID_SELECT, "fstore_image");
    EXPECT_CODE(fstore_image(f, "x.png", (enum FImageFormat)3), INVALID_SELECT, "fstore_image");
    EXPECT_CODE(fstore_image(f, "x.png", (enum FImageFormat)-1), INVALID_SELECT, "fstore_image");
    EXPECT_CODE(fstore_image(flat, "x.png", F_PNG), ILLEGAL_DIMENSIONALITY, "fstore_image");
    EXPECT_CODE(fstore_image(four_d, "x.png", F_PNG), ILLEGAL_DIMENSIONALITY, "fstore_image");
    EXPECT_CODE(fstore_image(five, "x.png", F_PNG), ILLEGAL_DIMENSION, "fstore_image");
    EXPECT_CODE(fstore_image(none, "x.png", F_PNG), ILLEGAL_DIMENSION, "fstore_image");
    EXPECT_CODE(fstore_image(empty, "x.png", F_BMP), ILLEGAL_DIMENSION, "fstore_image");
    EXPECT_CODE(fstore_image(huge, "x.png", F_PNG), ILLEGAL_DIMENSION, "fstore_image");
    EXPECT_CODE(fstore_image(wide, "x.jpg", F_JPEG), ILLEGAL_DIMENSION, "fstore_image");
    EXPECT_CODE(fstore_image(f, "/nonexistent/kiln/x.png", F_PNG), IO_ERROR, "fstore_image");
    release(five);
    release(none);
    release(flat);
    release(four_d);
    release(empty);
    release(huge);
    release(wide);
  }
}

/* ---- elementwise ops ----------------------------------------------------------------------- */

typedef FGraphNode *(*Binary)(FGraphNode *, FGraphNode *);
typedef FGraphNode *(*Unary)(FGraphNode *);

static void hostile_elementwise(FGraphNode *f, FGraphNode *d) {
  static const struct {
    Binary fn;
    const char *name;
    int needs_matrices;
  } binaries[] = {{fadd_g, "fadd_g", 0},         {fsub_g, "fsub_g", 0},     {fdiv_g, "fdiv_g", 0},
                  {fmul_g, "fmul_g", 0},         {fpow_g, "fpow_g", 0},     {fless_g, "fless_g", 0},
                  {fgreater_g, "fgreater_g", 0}, {fequal_g, "fequal_g", 0}, {fmin_g, "fmin_g", 0},
                  {fmax_g, "fmax_g", 0},         {fmatmul, "fmatmul", 1}};
  static const struct {
    Unary fn;
    const char *name;
  } unaries[] = {{flog, "flog"},   {flog2, "flog2"}, {flog10, "flog10"}, {fsin, "fsin"},
                 {fsqrt_g, "fsqrt_g"}, {fexp, "fexp"}, {fcos, "fcos"}, {ftan, "ftan"},
                 {fasin, "fasin"}, {facos, "facos"}, {fatan, "fatan"}, {fneg, "fneg"},
                 {fsign, "fsign"}, {feven, "feven"}, {fabs_g, "fabs_g"}, {fflatten, "fflatten"}};
  FGraphNode *gone = freed_node();
  size_t i;
  for (i = 0; i < sizeof binaries / sizeof binaries[0]; ++i) {
    EXPECT_NULL(binaries[i].fn(NULL, f), INVALID_SELECT, binaries[i].name);
    EXPECT_NULL(binaries[i].fn(f, NULL), INVALID_SELECT, binaries[i].name);
    EXPECT_NULL(binaries[i].fn(NULL, NULL), INVALID_SELECT, binaries[i].name);
    EXPECT_NULL(binaries[i].fn(gone, f), INVALID_SELECT, binaries[i].name);
    EXPECT_NULL(binaries[i].fn(f, gone), INVALID_SELECT, binaries[i].name);
    /* [2,3] and [5] */
    EXPECT_NULL(binaries[i].fn(f, d),
                binaries[i].needs_matrices ? ILLEGAL_DIMENSIONALITY : INCOMPATIBLE_SHAPES,
                binaries[i].name);
  }
  for (i = 0; i < sizeof unaries / sizeof unaries[0]; ++i) {
    EXPECT_NULL(unaries[i].fn(NULL), INVALID_SELECT, unaries[i].name);
    EXPECT_NULL(unaries[i].fn(gone), INVALID_SELECT, unaries[i].name);
  }
  EXPECT_NULL(feven(d), WRONG_TYPE, "feven");

  /* Every scalar form with NULL and freed nodes. */
#define KT_SCALAR(name, value)                                  \
  EXPECT_NULL(name(NULL, value), INVALID_SELECT, #name);        \
  EXPECT_NULL(name(gone, value), INVALID_SELECT, #name)
#define KT_SCALAR_LEFT(name, value)                             \
  EXPECT_NULL(name(value, NULL), INVALID_SELECT, #name);        \
  EXPECT_NULL(name(value, gone), INVALID_SELECT, #name)
#define KT_SCALARS(base)                 \
  KT_SCALAR(base##_ci, INT_MIN);         \
  KT_SCALAR(base##_cl, LONG_MIN);        \
  KT_SCALAR(base##_cf, NAN);             \
  KT_SCALAR(base##_cd, -INFINITY)
  KT_SCALARS(fadd);
  KT_SCALARS(fsub);
  KT_SCALARS(fdiv);
  KT_SCALARS(fmul);
  KT_SCALARS(fpow);
  KT_SCALARS(fless);
  KT_SCALARS(fgreater);
  KT_SCALARS(fequal);
  KT_SCALARS(fmin);
  KT_SCALARS(fmax);
  KT_SCALAR_LEFT(fsub_ici, INT_MIN);
  KT_SCALAR_LEFT(fsub_icl, LONG_MIN);
  KT_SCALAR_LEFT(fsub_icf, NAN);
  KT_SCALAR_LEFT(fsub_icd, INFINITY);
  KT_SCALAR_LEFT(fdiv_ici, 0);
  KT_SCALAR_LEFT(fdiv_icl, LONG_MIN);
  KT_SCALAR_LEFT(fdiv_icf, 0.0f);
  KT_SCALAR_LEFT(fdiv_icd, -0.0);
#undef KT_SCALARS
#undef KT_SCALAR_LEFT
#undef KT_SCALAR

  /* Integer edge values: INT_MIN / -1 and division by zero must not trap. */
  {
    FGraphNode *imin = keep(KT_NODE(F_INT32, KT_SHAPE(3), INT_MIN, -1, 0));
    FGraphNode *lmin = keep(KT_NODE(F_INT64, KT_SHAPE(2), -9223372036854775807.0 - 1, 0));
    FGraphNode *r = fdiv_ci(imin, -1);
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    fFreeGraph(r);
    r = fdiv_ci(imin, 0);
    CHECK_VALUES(r, 0, 0, 0, 0);
    fFreeGraph(r);
    r = fdiv_cl(lmin, -1);
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    fFreeGraph(r);
    r = fdiv_ici(INT_MIN, imin);
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    fFreeGraph(r);
    r = fabs_g(imin);
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    fFreeGraph(r);
    r = fneg(lmin);
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    fFreeGraph(r);
    r = fpow_ci(imin, INT_MIN);
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    fFreeGraph(r);
    r = fpow_cl(lmin, LONG_MAX);
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    fFreeGraph(r);
    r = fconvert(fmul_cd(d, 1e300), F_INT32); /* saturates */
    CHECK_VALUES(r, 0, INT_MAX, INT_MAX, INT_MAX, INT_MAX, INT_MAX);
    fFreeGraph(r);
    r = fconvert(fdiv_cd(fsub_cd(d, 1.0), 0.0), F_INT64); /* NaN gives 0, inf saturates */
    CHECK(r != NULL && fCalculateResult(r) != NULL);
    if (r != NULL && r->result_data != NULL) CHECK(kt_value(r, 0) == 0);
    fFreeGraph(r);
    release(imin);
    release(lmin);
  }
}

/* ---- matmul, reductions, shape ops --------------------------------------------------------- */

static void hostile_shapes(FGraphNode *f, FGraphNode *v, FGraphNode *d, FGraphNode *e) {
  FGraphNode *gone = freed_node();
  FGraphNode *huge_col = keep(fconstant_f(1, (size_t[]){P40, 2}, 2));
  FGraphNode *huge_row = keep(fconstant_f(1, (size_t[]){2, P40}, 2));
  FGraphNode *huge1 = keep(fconstant_f(1, (size_t[]){P40}, 1));
  /* Nearly the largest node kiln describes: doubled, its bytes would not fit in 63 bits. */
  FGraphNode *big = keep(fconstant_f(1, (size_t[]){(size_t)1 << 60}, 1));
  FGraphNode *b3 = keep(fconstant_f(1, (size_t[]){2, 2, 3}, 3));
  FGraphNode *b3x = keep(fconstant_f(1, (size_t[]){3, 3, 2}, 3));

  /* fmatmul */
  EXPECT_NULL(fmatmul(v, v), ILLEGAL_DIMENSIONALITY, "fmatmul");
  EXPECT_NULL(fmatmul(f, f), INCOMPATIBLE_SHAPES, "fmatmul");
  EXPECT_NULL(fmatmul(b3, b3x), INCOMPATIBLE_SHAPES, "fmatmul"); /* batch 2 vs 3 */
  EXPECT_NULL(fmatmul(huge_col, huge_row), OUT_OF_MEMORY, "fmatmul"); /* [2^40, 2^40] */

  /* Reductions and flattening */
  {
    static const int axes[] = {2, -3, INT_MAX, INT_MIN, INT_MIN + 1};
    size_t i;
    for (i = 0; i < sizeof axes / sizeof axes[0]; ++i) {
      EXPECT_NULL(freduce_sum(f, axes[i]), ILLEGAL_DIMENSION, "freduce_sum");
      EXPECT_NULL(freduce_mul(f, axes[i]), ILLEGAL_DIMENSION, "freduce_mul");
      EXPECT_NULL(freduce_min(f, axes[i]), ILLEGAL_DIMENSION, "freduce_min");
      EXPECT_NULL(freduce_max(f, axes[i]), ILLEGAL_DIMENSION, "freduce_max");
      EXPECT_NULL(fflatten_dimension(f, axes[i]), ILLEGAL_DIMENSION, "fflatten_dimension");
    }
    EXPECT_NULL(freduce_sum(NULL, 0), INVALID_SELECT, "freduce_sum");
    EXPECT_NULL(freduce_max(gone, 0), INVALID_SELECT, "freduce_max");
    EXPECT_NULL(fflatten_dimension(f, 0), ILLEGAL_DIMENSION, "fflatten_dimension");
    EXPECT_NULL(fflatten_dimension(NULL, 1), INVALID_SELECT, "fflatten_dimension");
    /* The minimum or maximum of nothing does not exist. */
    EXPECT_NULL(freduce_min(e, 0), INCOMPATIBLE_SHAPES, "freduce_min");
    EXPECT_NULL(freduce_max(e, 0), INCOMPATIBLE_SHAPES, "freduce_max");
    /* Sums and products of nothing are 0 and 1. */
    EXPECT_VALUES(freduce_sum(e, 0), 0, 0, 0);
    EXPECT_VALUES(freduce_mul(e, 0), 1, 1, 1);
  }

  /* fconvert */
  EXPECT_NULL(fconvert(f, (enum FType)4), WRONG_TYPE, "fconvert");
  EXPECT_NULL(fconvert(f, (enum FType)-1), WRONG_TYPE, "fconvert");
  EXPECT_NULL(fconvert(f, (enum FType)INT_MAX), WRONG_TYPE, "fconvert");
  EXPECT_NULL(fconvert(NULL, F_INT32), INVALID_SELECT, "fconvert");

  /* freshape */
  EXPECT_NULL(freshape(f, NULL, 2), INVALID_SELECT, "freshape");
  EXPECT_NULL(freshape(NULL, (size_t[]){6}, 1), INVALID_SELECT, "freshape");
  EXPECT_NULL(freshape(f, (size_t[]){6}, -1), ILLEGAL_DIMENSIONALITY, "freshape");
  EXPECT_NULL(freshape(f, (size_t[]){6}, INT_MIN), ILLEGAL_DIMENSIONALITY, "freshape");
  EXPECT_NULL(freshape(f, (size_t[]){SIZE_MAX}, 1), ILLEGAL_DIMENSION, "freshape");
  EXPECT_NULL(freshape(f, (size_t[]){7}, 1), INCOMPATIBLE_SHAPES, "freshape");
  EXPECT_NULL2(freshape(f, (size_t[]){P40, P40}, 2), INCOMPATIBLE_SHAPES, OUT_OF_MEMORY,
               "freshape");
  /* 2^32 * 2^32 * 6 wraps to 0 mod 2^64, 2^64 + 6 to 6: neither is [2,3]'s size. */
  EXPECT_NULL2(freshape(e, (size_t[]){P32, P32}, 2), INCOMPATIBLE_SHAPES, OUT_OF_MEMORY,
               "freshape");
  /* A 0 among the sizes must not hide the overflow of the others. */
  EXPECT_NULL2(freshape(e, (size_t[]){P40, P40, 0}, 3), OUT_OF_MEMORY, INCOMPATIBLE_SHAPES,
               "freshape");

  /* fslice: out-of-range bounds are clamped, as in Python. */
  EXPECT_NULL(fslice(d, NULL, (long[]){1}), INVALID_SELECT, "fslice");
  EXPECT_NULL(fslice(d, (long[]){0}, NULL), INVALID_SELECT, "fslice");
  EXPECT_NULL(fslice(NULL, (long[]){0}, (long[]){1}), INVALID_SELECT, "fslice");
  EXPECT_VALUES(fslice(d, (long[]){LONG_MIN}, (long[]){LONG_MAX}), 1, 2, 3, 4, 5);
  {
    FGraphNode *r = fslice(d, (long[]){LONG_MAX}, (long[]){LONG_MIN});
    CHECK_SHAPE(r, 0);
    fFreeGraph(r);
  }
  /* fslice_step */
  EXPECT_NULL(fslice_step(d, (long[]){0}, (long[]){5}, NULL), INVALID_SELECT, "fslice_step");
  EXPECT_NULL(fslice_step(d, (long[]){0}, (long[]){5}, (long[]){0}), INVALID_SELECT,
              "fslice_step");
  /* A step of LONG_MAX or LONG_MIN takes one element, as Python's a[::sys.maxsize]. */
  EXPECT_VALUES(fslice_step(d, (long[]){0}, (long[]){5}, (long[]){LONG_MAX}), 1);
  EXPECT_VALUES(fslice_step(d, (long[]){LONG_MIN}, (long[]){LONG_MAX}, (long[]){LONG_MAX}), 1);
  EXPECT_VALUES(fslice_step(d, (long[]){4}, (long[]){-6}, (long[]){LONG_MIN}), 5);
  EXPECT_VALUES(fslice_step(d, (long[]){LONG_MAX}, (long[]){LONG_MIN}, (long[]){LONG_MIN}), 5);
  EXPECT_VALUES(fslice_step(d, (long[]){LONG_MAX}, (long[]){LONG_MIN}, (long[]){-2}), 5, 3, 1);
  {
    FGraphNode *r = fslice_step(huge1, (long[]){0}, (long[]){LONG_MAX}, (long[]){LONG_MAX});
    CHECK_SHAPE(r, 1); 
    fFreeGraph(r);
  }

  /* fextend, fextend_step */
  EXPECT_NULL(fextend(d, NULL, (size_t[]){0}), INVALID_SELECT, "fextend");
  EXPECT_NULL(fextend(d, (size_t[]){8}, NULL), INVALID_SELECT, "fextend");
  EXPECT_NULL(fextend(d, (size_t[]){4}, (size_t[]){0}), INVALID_SELECT, "fextend");
  EXPECT_NULL(fextend(d, (size_t[]){8}, (size_t[]){4}), INVALID_SELECT, "fextend");
  EXPECT_NULL(fextend(d, (size_t[]){SIZE_MAX}, (size_t[]){0}), ILLEGAL_DIMENSION, "fextend");
  EXPECT_NULL(fextend(d, (size_t[]){8}, (size_t[]){SIZE_MAX}), ILLEGAL_DIMENSION, "fextend");
  /* INT64_MAX + 5 overflows: the node cannot fit. */
  EXPECT_NULL(fextend(d, (size_t[]){8}, (size_t[]){I64MAX}), INVALID_SELECT, "fextend");
  EXPECT_NULL(fextend(d, (size_t[]){I64MAX}, (size_t[]){I64MAX - 1}), INVALID_SELECT, "fextend");
  EXPECT_NULL(fextend(d, (size_t[]){I64MAX}, (size_t[]){I64MAX}), INVALID_SELECT, "fextend");
  /* Padding [5] to INT64_MAX elements is legal but cannot be executed. */
  EXPECT_OOM(fextend(d, (size_t[]){I64MAX}, (size_t[]){0}), "fextend");
  EXPECT_NULL(fextend_step(d, (size_t[]){8}, (size_t[]){0}, NULL), INVALID_SELECT,
              "fextend_step");
  EXPECT_NULL(fextend_step(d, (size_t[]){20}, (size_t[]){0}, (long[]){0}), INVALID_SELECT,
              "fextend_step");
  EXPECT_NULL2(fextend_step(d, (size_t[]){20}, (size_t[]){0}, (long[]){LONG_MAX}),
               INVALID_SELECT, OUT_OF_MEMORY, "fextend_step");
  EXPECT_NULL2(fextend_step(d, (size_t[]){20}, (size_t[]){0}, (long[]){LONG_MIN}),
               INVALID_SELECT, OUT_OF_MEMORY, "fextend_step");
  EXPECT_NULL2(fextend_step(d, (size_t[]){I64MAX}, (size_t[]){0}, (long[]){LONG_MAX}),
               INVALID_SELECT, OUT_OF_MEMORY, "fextend_step");
  EXPECT_NULL2(fextend_step(d, (size_t[]){I64MAX}, (size_t[]){0}, (long[]){LONG_MIN}),
               INVALID_SELECT, OUT_OF_MEMORY, "fextend_step");
  EXPECT_NULL(fextend_step(d, (size_t[]){I64MAX}, (size_t[]){I64MAX}, (long[]){2}),
              INVALID_SELECT, "fextend_step");
  EXPECT_VALUES(fextend_step(d, (size_t[]){9}, (size_t[]){0}, (long[]){-2}), 5, 0, 4, 0, 3, 0, 2,
                0, 1);

  /* fconcat, fexpand */
  EXPECT_NULL(fconcat(NULL, f, 0), INVALID_SELECT, "fconcat");
  EXPECT_NULL(fconcat(f, gone, 0), INVALID_SELECT, "fconcat");
  EXPECT_NULL(fconcat(f, f, 2), ILLEGAL_DIMENSION, "fconcat");
  EXPECT_NULL(fconcat(f, f, UINT_MAX), ILLEGAL_DIMENSION, "fconcat");
  EXPECT_NULL(fconcat(f, f, (unsigned)INT_MAX + 1), ILLEGAL_DIMENSION, "fconcat");
  EXPECT_NULL(fconcat(f, d, 0), ILLEGAL_DIMENSIONALITY, "fconcat"); /* ranks differ */
  {
    FGraphNode *g = keep(fconstant_f(0, (size_t[]){2, 4}, 2));
    EXPECT_NULL(fconcat(f, g, 0), INCOMPATIBLE_SHAPES, "fconcat"); /* 3 vs 4 columns */
    release(g);
  }
  EXPECT_OOM(fconcat(big, big, 0), "fconcat");
  EXPECT_NULL(fexpand(NULL, 0, 2), INVALID_SELECT, "fexpand");
  EXPECT_NULL(fexpand(f, 3, 2), ILLEGAL_DIMENSION, "fexpand");
  EXPECT_NULL(fexpand(f, UINT_MAX, 2), ILLEGAL_DIMENSION, "fexpand");
  EXPECT_NULL(fexpand(huge_col, 0, UINT_MAX), OUT_OF_MEMORY, "fexpand");
  EXPECT_OOM(fexpand(big, 1, 4), "fexpand");
  {
    FGraphNode *r = fexpand(f, 1, 0); /* size 0: empty */
    CHECK_SHAPE(r, 2, 0, 3);
    fFreeGraph(r);
  }

  /* frepeat */
  EXPECT_NULL(frepeat(NULL, (int[]){1}), INVALID_SELECT, "frepeat");
  EXPECT_NULL(frepeat(f, NULL), INVALID_SELECT, "frepeat");
  EXPECT_NULL(frepeat(f, (int[]){1, -1}), INVALID_SELECT, "frepeat");
  EXPECT_NULL(frepeat(f, (int[]){-1, 1}), INVALID_SELECT, "frepeat");
  EXPECT_NULL(frepeat(f, (int[]){INT_MIN, 1}), INVALID_SELECT, "frepeat");
  /* Sizes that overflow (a count x makes x + 1 copies): 2^31 * 2^31 * 6 > INT64_MAX, and
   * 2^40 * (2^24 - 1 + 1) wraps to 0. */
  EXPECT_NULL(frepeat(f, (int[]){INT_MAX, INT_MAX}), OUT_OF_MEMORY, "frepeat");
  EXPECT_NULL(frepeat(huge1, (int[]){(1 << 24) - 1}), OUT_OF_MEMORY, "frepeat");
  EXPECT_OOM(frepeat(big, (int[]){4}), "frepeat");

  /* ftranspose */
  EXPECT_NULL(ftranspose(NULL, (int[]){1, 0}), INVALID_SELECT, "ftranspose");
  EXPECT_NULL(ftranspose(f, NULL), INVALID_SELECT, "ftranspose");
  /* Axes out of range or repeated: dimension arguments outside their legal range. */
  EXPECT_NULL(ftranspose(f, (int[]){0, 0}), ILLEGAL_DIMENSION, "ftranspose");
  EXPECT_NULL(ftranspose(f, (int[]){1, 1}), ILLEGAL_DIMENSION, "ftranspose");
  EXPECT_NULL(ftranspose(f, (int[]){0, 2}), ILLEGAL_DIMENSION, "ftranspose");
  EXPECT_NULL(ftranspose(f, (int[]){INT_MIN, 0}), ILLEGAL_DIMENSION, "ftranspose");
  EXPECT_NULL(ftranspose(f, (int[]){INT_MAX, 0}), ILLEGAL_DIMENSION, "ftranspose");

  release(huge_col);
  release(huge_row);
  release(huge1);
  release(big);
  release(b3);
  release(b3x);
}

/* ---- windows, convolution, indexing -------------------------------------------------------- */

static void hostile_windows(FGraphNode *f, FGraphNode *v, FGraphNode *d) {
  FGraphNode *gone = freed_node();
  FGraphNode *k22 = keep(fconstant_f(1, (size_t[]){2, 2}, 2));
  FGraphNode *k13 = keep(fconstant_f(1, (size_t[]){1, 3}, 2));
  FGraphNode *k33 = keep(fconstant_f(1, (size_t[]){3, 3}, 2));
  FGraphNode *k5 = keep(fconstant_f(1, (size_t[]){5, 3}, 2));
  FGraphNode *k4d = keep(fconstant_f(1, (size_t[]){1, 1, 1, 1}, 4));
  FGraphNode *kbig = keep(fconstant_f(1, (size_t[]){P40, 3}, 2));
  FGraphNode *huge1 = keep(fconstant_f(1, (size_t[]){P40}, 1));
  FGraphNode *w = keep(fconstant_f(1, (size_t[]){4, 2}, 2)); /* 4 windows of [2] */
  FGraphNode *w0 = keep(fconstant_f(1, (size_t[]){0, 1, 1}, 3));

  /* fconvolve: f is [2,3] */
  EXPECT_NULL(fconvolve(NULL, k22, (unsigned[]){1}), INVALID_SELECT, "fconvolve");
  EXPECT_NULL(fconvolve(f, NULL, (unsigned[]){1}), INVALID_SELECT, "fconvolve");
  EXPECT_NULL(fconvolve(f, gone, (unsigned[]){1}), INVALID_SELECT, "fconvolve");
  EXPECT_NULL(fconvolve(f, k22, NULL), INVALID_SELECT, "fconvolve");
  EXPECT_NULL(fconvolve(f, k13, (unsigned[]){0}), INVALID_SELECT, "fconvolve");
  EXPECT_NULL(fconvolve(f, k22, (unsigned[]){1}), INCOMPATIBLE_SHAPES, "fconvolve"); /* 3 vs 2 */
  EXPECT_NULL(fconvolve(f, k33, (unsigned[]){1}), INVALID_SELECT, "fconvolve"); /* 3 > 2 */
  EXPECT_NULL(fconvolve(f, k5, (unsigned[]){1}), INVALID_SELECT, "fconvolve");
  EXPECT_NULL(fconvolve(f, kbig, (unsigned[]){1}), INVALID_SELECT, "fconvolve");
  EXPECT_NULL(fconvolve(f, v, (unsigned[]){1}), ILLEGAL_DIMENSIONALITY, "fconvolve");
  EXPECT_NULL(fconvolve(f, k4d, (unsigned[]){1}), ILLEGAL_DIMENSIONALITY, "fconvolve");
  {
    /* A step larger than the node: one window. */
    FGraphNode *row = keep(fconstant_f(1, (size_t[]){1, 3}, 2));
    FGraphNode *r = fconvolve(f, row, (unsigned[]){UINT_MAX});
    CHECK_SHAPE(r, 1);
    CHECK_VALUES(r, 0, 6);
    fFreeGraph(r);
    release(row);
  }

  /* findex, findex_set: indices must be integers of a fitting shape, inside the dimension. */
  {
    FGraphNode *fi = keep(KT_NODE(F_FLOAT32, KT_SHAPE(2), 0, 1));
    FGraphNode *big_i = keep(KT_NODE(F_INT64, KT_SHAPE(2), 0, 9.2e18));
    FGraphNode *neg_i = keep(KT_NODE(F_INT64, KT_SHAPE(2), 0, -9.2e18));
    FGraphNode *rank3 = keep(KT_NODE(F_INT32, KT_SHAPE(1, 1, 1), 0));
    FGraphNode *wrong = keep(KT_NODE(F_INT32, KT_SHAPE(3, 1), 0, 0, 0)); /* prefix [3] of [2,3] */
    FGraphNode *upd = keep(fconstant_f(7, (size_t[]){2, 3}, 2));
    FGraphNode *upd1 = keep(fconstant_f(7, (size_t[]){2}, 1));
    FGraphNode *nine = keep(fconstant_d(9, (size_t[]){2}, 1));
    EXPECT_NULL(findex(NULL, v), INVALID_SELECT, "findex");
    EXPECT_NULL(findex(f, NULL), INVALID_SELECT, "findex");
    EXPECT_NULL(findex(f, gone), INVALID_SELECT, "findex");
    EXPECT_NULL(findex(f, fi), WRONG_TYPE, "findex");
    EXPECT_NULL(findex(f, big_i), INVALID_SELECT, "findex");
    EXPECT_NULL(findex(f, neg_i), INVALID_SELECT, "findex");
    EXPECT_NULL(findex(f, rank3), INCOMPATIBLE_SHAPES, "findex");
    EXPECT_NULL(findex(f, wrong), INCOMPATIBLE_SHAPES, "findex");
    EXPECT_NULL(findex_set(NULL, upd, v), INVALID_SELECT, "findex_set");
    EXPECT_NULL(findex_set(f, NULL, v), INVALID_SELECT, "findex_set");
    EXPECT_NULL(findex_set(f, upd, NULL), INVALID_SELECT, "findex_set");
    EXPECT_NULL(findex_set(f, upd, gone), INVALID_SELECT, "findex_set");
    EXPECT_NULL(findex_set(f, upd, fi), WRONG_TYPE, "findex_set");
    EXPECT_NULL(findex_set(f, upd1, v), INCOMPATIBLE_SHAPES, "findex_set");
    EXPECT_NULL(findex_set(f, upd, rank3), INCOMPATIBLE_SHAPES, "findex_set");
    EXPECT_NULL(findex_set(f, upd, big_i), INVALID_SELECT, "findex_set");
    /* A negative index drops its element, however negative. */
    EXPECT_VALUES(findex_set(d, nine, neg_i), 9, 2, 3, 4, 5);
    release(fi);
    release(big_i);
    release(neg_i);
    release(rank3);
    release(wrong);
    release(upd);
    release(upd1);
    release(nine);
  }

  /* fsliding_window: f is [2,3] */
  EXPECT_NULL(fsliding_window(NULL, (size_t[]){1, 1}, (unsigned[]){1, 1}), INVALID_SELECT,
              "fsliding_window");
  EXPECT_NULL(fsliding_window(f, NULL, (unsigned[]){1, 1}), INVALID_SELECT, "fsliding_window");
  EXPECT_NULL(fsliding_window(f, (size_t[]){1, 1}, NULL), INVALID_SELECT, "fsliding_window");
  EXPECT_NULL(fsliding_window(f, (size_t[]){2, 4}, (unsigned[]){1, 1}), INVALID_SELECT,
              "fsliding_window");
  EXPECT_NULL(fsliding_window(f, (size_t[]){0, 1}, (unsigned[]){1, 1}), INVALID_SELECT,
              "fsliding_window");
  EXPECT_NULL(fsliding_window(f, (size_t[]){1, 1}, (unsigned[]){1, 0}), INVALID_SELECT,
              "fsliding_window");
  EXPECT_NULL(fsliding_window(f, (size_t[]){I64MAX, 1}, (unsigned[]){1, 1}), INVALID_SELECT,
              "fsliding_window");
  EXPECT_NULL(fsliding_window(f, (size_t[]){SIZE_MAX, 1}, (unsigned[]){1, 1}), ILLEGAL_DIMENSION,
              "fsliding_window");
  {
    FGraphNode *r = fsliding_window(f, (size_t[]){2, 2}, (unsigned[]){UINT_MAX, UINT_MAX});
    CHECK_SHAPE(r, 1, 2, 2);
    CHECK_VALUES(r, 0, 1, 2, 4, 5);
    fFreeGraph(r);
  }
  {
    /* 2^40 windows of [1] over [2^40]: legal, as a view, but too many to execute. */
    EXPECT_OOM(fsliding_window(huge1, (size_t[]){1}, (unsigned[]){1}), "fsliding_window");
  }

  /* funslide_window: w is 4 windows of [2] */
  EXPECT_NULL(funslide_window(NULL, (size_t[]){5}, (unsigned[]){1}), INVALID_SELECT,
              "funslide_window");
  EXPECT_NULL(funslide_window(w, NULL, (unsigned[]){1}), INVALID_SELECT, "funslide_window");
  EXPECT_NULL(funslide_window(w, (size_t[]){5}, NULL), INVALID_SELECT, "funslide_window");
  EXPECT_NULL(funslide_window(w, (size_t[]){5}, (unsigned[]){0}), INVALID_SELECT,
              "funslide_window");
  EXPECT_NULL(funslide_window(w, (size_t[]){6}, (unsigned[]){1}), INCOMPATIBLE_SHAPES,
              "funslide_window");
  EXPECT_NULL(funslide_window(w, (size_t[]){1}, (unsigned[]){1}), INVALID_SELECT,
              "funslide_window"); /* a window of [2] in [1] */
  EXPECT_NULL(funslide_window(w, (size_t[]){SIZE_MAX}, (unsigned[]){1}), ILLEGAL_DIMENSION,
              "funslide_window");
  EXPECT_NULL(funslide_window(w, (size_t[]){I64MAX}, (unsigned[]){1}), INCOMPATIBLE_SHAPES,
              "funslide_window");
  /* A 1-D node is 5 windows of nothing: they do not make up a shape of no dimensions. */
  EXPECT_NULL(funslide_window(d, (size_t[]){1}, (unsigned[]){1}), INCOMPATIBLE_SHAPES,
              "funslide_window");
  /* 2^32 * 2^32 windows must not wrap to the 0 windows given; [2^32, 2^32] cannot exist. */
  EXPECT_NULL2(funslide_window(w0, (size_t[]){P32, P32}, (unsigned[]){1, 1}), INCOMPATIBLE_SHAPES,
               OUT_OF_MEMORY, "funslide_window");
  EXPECT_VALUES(funslide_window(w, (size_t[]){5}, (unsigned[]){1}), 1, 2, 2, 2, 1);

  /* fpermutate */
  EXPECT_NULL(fpermutate(NULL, 0), INVALID_SELECT, "fpermutate");
  EXPECT_NULL(fpermutate(f, 2), ILLEGAL_DIMENSION, "fpermutate");
  EXPECT_NULL(fpermutate(f, UINT_MAX), ILLEGAL_DIMENSION, "fpermutate");
  EXPECT_NULL(fpermutate(f, (unsigned)INT_MAX + 1), ILLEGAL_DIMENSION, "fpermutate");

  /* fpooling_sum, fpooling_max: f is [2,3]; windows over its first dimension. */
  {
    typedef FGraphNode *(*Pool)(FGraphNode *, const size_t *, const unsigned *);
    static const struct {
      Pool fn;
      const char *name;
    } pools[] = {{fpooling_sum, "fpooling_sum"}, {fpooling_max, "fpooling_max"}};
    size_t i;
    for (i = 0; i < 2; ++i) {
      EXPECT_NULL(pools[i].fn(NULL, (size_t[]){1}, (unsigned[]){1}), INVALID_SELECT,
                  pools[i].name);
      EXPECT_NULL(pools[i].fn(f, NULL, (unsigned[]){1}), INVALID_SELECT, pools[i].name);
      EXPECT_NULL(pools[i].fn(f, (size_t[]){1}, NULL), INVALID_SELECT, pools[i].name);
      EXPECT_NULL(pools[i].fn(f, (size_t[]){3}, (unsigned[]){1}), INVALID_SELECT, pools[i].name);
      EXPECT_NULL(pools[i].fn(f, (size_t[]){0}, (unsigned[]){1}), INVALID_SELECT, pools[i].name);
      EXPECT_NULL(pools[i].fn(f, (size_t[]){1}, (unsigned[]){0}), INVALID_SELECT, pools[i].name);
      EXPECT_NULL(pools[i].fn(f, (size_t[]){I64MAX}, (unsigned[]){1}), INVALID_SELECT,
                  pools[i].name);
      EXPECT_NULL(pools[i].fn(f, (size_t[]){SIZE_MAX}, (unsigned[]){1}), ILLEGAL_DIMENSION,
                  pools[i].name);
    }
    EXPECT_VALUES(fpooling_sum(f, (size_t[]){2}, (unsigned[]){UINT_MAX}), 21);
    EXPECT_VALUES(fpooling_max(f, (size_t[]){1}, (unsigned[]){UINT_MAX}), 3);
  }

  /* fdropout */
  EXPECT_NULL(fdropout(NULL, 0.5), INVALID_SELECT, "fdropout");
  EXPECT_NULL(fdropout(f, -0.001), INVALID_SELECT, "fdropout");
  EXPECT_NULL(fdropout(f, 1.001), INVALID_SELECT, "fdropout");
  EXPECT_NULL(fdropout(f, NAN), INVALID_SELECT, "fdropout");
  EXPECT_NULL(fdropout(f, INFINITY), INVALID_SELECT, "fdropout");
  EXPECT_NULL(fdropout(f, -INFINITY), INVALID_SELECT, "fdropout");
  EXPECT_VALUES(fdropout(f, 0.0), 1, 2, 3, 4, 5, 6);
  EXPECT_VALUES(fdropout(f, 1.0), 0, 0, 0, 0, 0, 0);

  release(k22);
  release(k13);
  release(k33);
  release(k5);
  release(k4d);
  release(kbig);
  release(huge1);
  release(w);
  release(w0);
}

/* Empty nodes in corners the fuzzer (fuzz/graph.cpp) found; kept last, as a memory error
 * ends the process under AddressSanitizer. */
static void hostile_empty_nodes(void) {
  FGraphNode *none = keep(fCreateGraph("", 0, F_INT64, (size_t[]){0}, 1));
  FGraphNode *cube = keep(KT_NODE(F_INT32, KT_SHAPE(2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8));
  FGraphNode *three = keep(KT_NODE(F_FLOAT32, KT_SHAPE(3), 1, 2, 3));
  {
    /* Nothing placed after one zero, [1], broadcast into [2,2,2]: the CPU executor read the
     * 8 bytes before the empty node's buffer (fuzz/regressions/graph/
     * overflow-extend-empty-then-broadcast). */
    FGraphNode *zero = keep(fextend(none, (size_t[]){1}, (size_t[]){1}));
    EXPECT_VALUES(fadd_g(zero, cube), 1, 2, 3, 4, 5, 6, 7, 8);
    EXPECT_VALUES(fmul_g(zero, cube), 0, 0, 0, 0, 0, 0, 0, 0);
    release(zero);
  }
  {
    /* Gathering nothing: no values are copied (memcpy from NULL was undefined behaviour). */
    FGraphNode *r = findex(three, none);
    CHECK_SHAPE(r, 0);
    CHECK(r != NULL && fCalculateResult(r) != NULL && r->result_data->num_entries == 0);
    if (r != NULL) fFreeGraph(r);
  }
  release(none);
  release(cube);
  release(three);
}

void test_hostile(void) {
  FGraphNode *f = keep(KT_NODE(F_FLOAT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
  FGraphNode *v = keep(KT_NODE(F_INT32, KT_SHAPE(3), 0, 1, 2));
  FGraphNode *d = keep(KT_NODE(F_FLOAT64, KT_SHAPE(5), 1, 2, 3, 4, 5));
  FGraphNode *e = keep(fconstant_f(1, (size_t[]){0, 3}, 2));

  hostile_backends();
  hostile_creation();
  hostile_execution(f);
  hostile_serialization(f);
  hostile_elementwise(f, d);
  hostile_shapes(f, v, d, e);
  hostile_windows(f, v, d);

  release(f);
  release(v);
  release(d);
  release(e);
  hostile_empty_nodes();
  flintCleanup();
}
