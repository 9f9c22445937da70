/* Every error type with its message; NULL arguments; nothing crashes. */
#include <limits.h>
#include <string.h>

#include "check.h"

static void test_error_state(void) {
  /* The error stays until the next error (like errno). */
  CHECK(fmatmul(NULL, NULL) == NULL);
  CHECK(fErrorType() == INVALID_SELECT);
  {
    size_t shape[] = {1};
    FGraphNode *ok = fconstant_i(1, shape, 1);
    CHECK(ok != NULL);
    CHECK(fErrorType() == INVALID_SELECT);
    fFreeGraph(ok);
  }
}

static void test_each_error_type(void) {
  FGraphNode *f = KT_NODE(F_FLOAT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
  FGraphNode *g = KT_NODE(F_FLOAT32, KT_SHAPE(4, 5), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                          14, 15, 16, 17, 18, 19, 20);
  FGraphNode *v = KT_NODE(F_INT32, KT_SHAPE(3), 0, 1, 2);
  /* Keep the operands while nodes built from them come and go. */
  f->reference_counter++;
  g->reference_counter++;
  v->reference_counter++;

  /* WRONG_TYPE */
  CHECK_ERROR(feven(f) == NULL, WRONG_TYPE, "feven", "[2,3]");
  CHECK_ERROR(fconvert(f, (enum FType)9) == NULL, WRONG_TYPE, "fconvert", "9");
  CHECK_ERROR(findex(f, f) == NULL, WRONG_TYPE, "findex", "integer");
  CHECK_ERROR(fCreateGraph("", 0, (enum FType)-1, (size_t[]){0}, 1) == NULL, WRONG_TYPE,
              "fCreateGraph");

  /* ILLEGAL_DIMENSION */
  CHECK_ERROR(fflatten_dimension(f, 0) == NULL, ILLEGAL_DIMENSION, "fflatten_dimension", "[2,3]");
  CHECK_ERROR(freduce_sum(f, 2) == NULL, ILLEGAL_DIMENSION, "freduce_sum", "[2,3]");
  CHECK_ERROR(freduce_mul(f, -3) == NULL, ILLEGAL_DIMENSION, "freduce_mul");
  CHECK_ERROR(fconcat(f, f, 2) == NULL, ILLEGAL_DIMENSION, "fconcat");
  CHECK_ERROR(fconcat(f, f, UINT_MAX) == NULL, ILLEGAL_DIMENSION, "fconcat");
  CHECK_ERROR(fexpand(f, 3, 2) == NULL, ILLEGAL_DIMENSION, "fexpand");
  CHECK_ERROR(fpermutate(f, 2) == NULL, ILLEGAL_DIMENSION, "fpermutate");
  CHECK_ERROR(farange((size_t[]){2, 3}, 2, 2) == NULL, ILLEGAL_DIMENSION, "farange");
  CHECK_ERROR(freshape(f, (size_t[]){(size_t)-1}, 1) == NULL, ILLEGAL_DIMENSION, "freshape");
  CHECK_ERROR(fCreateGraph("", -1, F_INT32, (size_t[]){1}, 1) == NULL, ILLEGAL_DIMENSION,
              "fCreateGraph", "negative");

  /* ILLEGAL_DIMENSIONALITY */
  CHECK_ERROR(fmatmul(v, v) == NULL, ILLEGAL_DIMENSIONALITY, "fmatmul", "[3]");
  CHECK_ERROR(fconstant_i(1, (size_t[]){1}, 0) == NULL, ILLEGAL_DIMENSIONALITY, "fconstant_i");
  CHECK_ERROR(freshape(f, (size_t[]){6}, 0) == NULL, ILLEGAL_DIMENSIONALITY, "freshape");
  CHECK_ERROR(fstore_image(v, "never.png", F_PNG) == ILLEGAL_DIMENSIONALITY,
              ILLEGAL_DIMENSIONALITY, "fstore_image", "[3]");

  /* INCOMPATIBLE_SHAPES: the message names the function and both shapes. */
  CHECK_ERROR(fmatmul(f, g) == NULL, INCOMPATIBLE_SHAPES, "fmatmul", "[2,3]", "[4,5]");
  CHECK(strcmp(fErrorMessage(), "fmatmul: incompatible shapes [2,3] and [4,5]") == 0);
  CHECK_ERROR(fadd_g(f, g) == NULL, INCOMPATIBLE_SHAPES, "fadd_g", "[2,3]", "[4,5]");
  CHECK_ERROR(fless_g(g, v) == NULL, INCOMPATIBLE_SHAPES, "fless_g", "[4,5]", "[3]");
  CHECK_ERROR(freshape(f, (size_t[]){4, 2}, 2) == NULL, INCOMPATIBLE_SHAPES, "freshape", "[2,3]");
  CHECK_ERROR(fconcat(f, g, 0) == NULL, INCOMPATIBLE_SHAPES, "fconcat", "[2,3]", "[4,5]");
  CHECK_ERROR(fCreateGraph((int[]){1, 2}, 2, F_INT32, (size_t[]){3}, 1) == NULL,
              INCOMPATIBLE_SHAPES, "fCreateGraph", "2 entries", "[3]");
  CHECK_ERROR(findex_set(f, g, v) == NULL, INCOMPATIBLE_SHAPES, "findex_set");

  /* INVALID_SELECT: indices, slices, windows, NULL and freed nodes, NULL arrays. */
  {
    FGraphNode *bad_index = KT_NODE(F_INT32, KT_SHAPE(2), 0, 5);
    CHECK_ERROR(findex(f, bad_index) == NULL, INVALID_SELECT, "findex", "5");
    fFreeGraph(bad_index);
  }
  {
    /* Indices only known at run time: the error comes from the execution. */
    FGraphNode *idx = fadd_ci(KT_NODE(F_INT32, KT_SHAPE(2), 0, 1), 4);
    FGraphNode *r = findex(f, idx);
    CHECK(r != NULL);
    CHECK_ERROR(fExecuteGraph(r) == NULL, INVALID_SELECT, "fExecuteGraph");
    fFreeGraph(r);
  }
  CHECK_ERROR(fslice_step(f, (long[]){0, 0}, (long[]){2, 3}, (long[]){1, 0}) == NULL,
              INVALID_SELECT, "fslice_step");
  CHECK_ERROR(fsliding_window(f, (size_t[]){3, 1}, (unsigned[]){1, 1}) == NULL, INVALID_SELECT,
              "fsliding_window", "[2,3]");
  CHECK_ERROR(fsliding_window(f, (size_t[]){1, 1}, (unsigned[]){0, 1}) == NULL, INVALID_SELECT,
              "fsliding_window");
  CHECK_ERROR(fextend(f, (size_t[]){2, 3}, (size_t[]){1, 0}) == NULL, INVALID_SELECT, "fextend");
  CHECK_ERROR(frepeat(f, (int[]){-1, 1}) == NULL, INVALID_SELECT, "frepeat");
  CHECK_ERROR(fdropout(f, 1.5) == NULL, INVALID_SELECT, "fdropout");
  CHECK_ERROR(fadd_g(f, NULL) == NULL, INVALID_SELECT, "fadd_g", "b is NULL");
  CHECK_ERROR(fsub_ici(1, NULL) == NULL, INVALID_SELECT, "fsub_ici", "NULL");
  CHECK_ERROR(fneg(NULL) == NULL, INVALID_SELECT, "fneg");
  CHECK_ERROR(fslice(f, NULL, (long[]){1, 1}) == NULL, INVALID_SELECT, "fslice", "start is NULL");
  CHECK_ERROR(ftranspose(f, NULL) == NULL, INVALID_SELECT, "ftranspose");
  CHECK_ERROR(fconvolve(f, f, NULL) == NULL, INVALID_SELECT, "fconvolve", "steps is NULL");
  CHECK_ERROR(fCreateGraph(NULL, 2, F_INT32, (size_t[]){2}, 1) == NULL, INVALID_SELECT,
              "fCreateGraph", "data is NULL");
  CHECK_ERROR(fconstant_f(1.0f, NULL, 2) == NULL, INVALID_SELECT, "fconstant_f", "shape is NULL");
  CHECK_ERROR(fExecuteGraph(NULL) == NULL, INVALID_SELECT, "fExecuteGraph");
  CHECK_ERROR(fCalculateResult(NULL) == NULL, INVALID_SELECT, "fCalculateResult");
  CHECK_ERROR(fSyncMemory(NULL) == NULL, INVALID_SELECT, "fSyncMemory");
  CHECK_ERROR(fOptimizeMemory(NULL) == NULL, INVALID_SELECT, "fOptimizeMemory");
  CHECK_ERROR(fserialize(NULL, NULL) == NULL, INVALID_SELECT, "fserialize");
  CHECK_ERROR(fCalculateGradient(NULL, f) == NULL, INVALID_SELECT, "fCalculateGradient");
  fFreeGraph(NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fFreeGraph");
  fMarkGradientVariable(NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fMarkGradientVariable");
  fUnmarkGradientVariable(NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fUnmarkGradientVariable");
  fEnforceInverseBroadcasting(NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fEnforceInverseBroadcasting");
  fUnenforceInverseBroadcasting(NULL);
  CHECK_ERROR(1, INVALID_SELECT, "fUnenforceInverseBroadcasting");
  {
    /* A pointer that is not a node of this library. */
    FGraphNode fake;
    memset(&fake, 0, sizeof fake);
    CHECK_ERROR(fneg(&fake) == NULL, INVALID_SELECT, "fneg", "not a live node");
  }

  /* OCL_ERROR, where there is no OpenCL device */
  if (!kt_have_gpu()) CHECK_ERROR(fExecuteGraph_gpu(f) == NULL, OCL_ERROR, "fExecuteGraph_gpu");

  /* OUT_OF_MEMORY: sizes that cannot exist, and allocations that fail. */
  {
    size_t too_many[] = {(size_t)1 << 40, (size_t)1 << 40};
    CHECK_ERROR(fconstant_i(0, too_many, 2) == NULL, OUT_OF_MEMORY, "fconstant_i");
    size_t huge[] = {(size_t)1 << 20, (size_t)1 << 20, (size_t)1 << 12};
    FGraphNode *lazy = fconstant_d(1.0, huge, 3); /* nothing allocated yet */
    CHECK(lazy != NULL);
    CHECK_ERROR(fExecuteGraph(lazy) == NULL, OUT_OF_MEMORY, "fExecuteGraph");
    CHECK(lazy->result_data == NULL);
    fFreeGraph(lazy);
  }

  /* ILLEGAL_DERIVE */
  CHECK_ERROR(fCalculateGradient(f, f) == NULL, ILLEGAL_DERIVE, "fCalculateGradient");

  /* IO_ERROR */
  CHECK_ERROR(fload_image("/nonexistent/kiln/image.png") == NULL, IO_ERROR, "fload_image",
              "/nonexistent/kiln/image.png");
  CHECK_ERROR(fdeserialize("not serialized", (size_t[]){14}) == NULL, IO_ERROR, "fdeserialize",
              "magic");

  /* INTERNAL_ERROR is kiln's own failure: no valid call produces it. */
  CHECK(INTERNAL_ERROR == 7 && IO_ERROR == 10 && NO_ERROR == 0);

  f->reference_counter--;
  g->reference_counter--;
  v->reference_counter--;
  fFreeGraph(f);
  fFreeGraph(g);
  fFreeGraph(v);
}

void test_errors(void) {
  test_error_state();
  test_each_error_type();
}
