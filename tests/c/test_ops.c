/* The operations: values, result types and shapes (the document's examples where it has them,
 * with the project's decisions where they differ). */
#include <math.h>
#include <stdlib.h>

#include "check.h"

/* Builds `result`, checks type and values, frees it (and with it its operands). */
#define EXPECT(result, type, tol, ...)                 \
  do {                                                 \
    FGraphNode *kt_r_ = (result);                      \
    CHECK(kt_r_ != NULL);                              \
    if (kt_r_ != NULL) {                               \
      CHECK(kt_r_->operation.data_type == (type));     \
      CHECK_VALUES(kt_r_, tol, __VA_ARGS__);           \
      fFreeGraph(kt_r_);                               \
    }                                                  \
  } while (0)

static FGraphNode *i32s(void) { return KT_NODE(F_INT32, KT_SHAPE(3), 6, -3, 0); }
static FGraphNode *f32s(void) { return KT_NODE(F_FLOAT32, KT_SHAPE(3), 1.5, -2, 4); }
static FGraphNode *f64s(void) { return KT_NODE(F_FLOAT64, KT_SHAPE(3), 0.5, 2, 8); }

static void test_binary(void) {
  /* The document's example (an addition, see decision 3). */
  {
    float data_a[] = {0, 1, 2, 3, 4, 5};
    size_t shape_a[] = {2, 3};
    float data_b[] = {2, 4, 6};
    size_t shape_b = 3;
    FGraphNode *a = fCreateGraph((void *)data_a, 6, F_FLOAT32, shape_a, 2);
    FGraphNode *b = fCreateGraph((void *)data_b, 3, F_FLOAT32, &shape_b, 1);
    FGraphNode *c = fadd_g(a, b);
    CHECK_SHAPE(c, 2, 3);
    EXPECT(c, F_FLOAT32, 0, 2, 5, 8, 5, 8, 11);
  }
  EXPECT(fadd_g(i32s(), i32s()), F_INT32, 0, 12, -6, 0);
  EXPECT(fadd_g(i32s(), f64s()), F_FLOAT64, 0, 6.5, -1, 8);
  EXPECT(fsub_g(f32s(), i32s()), F_FLOAT32, 0, -4.5, 1, 4);
  EXPECT(fmul_g(f32s(), f64s()), F_FLOAT64, 0, 0.75, -4, 32);
  EXPECT(fdiv_g(f64s(), f32s()), F_FLOAT64, 1e-15, 1.0 / 3.0, -1, 2);
  EXPECT(fpow_g(f64s(), KT_NODE(F_INT64, KT_SHAPE(3), 2, 3, 0)), F_FLOAT64, 1e-12, 0.25, 8, 1);
  /* Integer division truncates; division by zero gives 0 (decision 13). */
  EXPECT(fdiv_g(KT_NODE(F_INT32, KT_SHAPE(4), 7, -7, 5, 1), KT_NODE(F_INT32, KT_SHAPE(4), 2, 2, 0, 0)),
         F_INT32, 0, 3, -3, 0, 0);
  /* Inverse broadcasting where normal does not fit: [2,3] and [2]. */
  EXPECT(fadd_g(KT_NODE(F_INT64, KT_SHAPE(2, 3), 0, 1, 2, 3, 4, 5), KT_NODE(F_INT64, KT_SHAPE(2), 10, 20)),
         F_INT64, 0, 10, 11, 12, 23, 24, 25);
  /* Size-1 dimensions repeat as in NumPy. */
  {
    FGraphNode *r = fadd_g(KT_NODE(F_INT32, KT_SHAPE(2, 1), 1, 2), KT_NODE(F_INT32, KT_SHAPE(1, 3), 10, 20, 30));
    CHECK_SHAPE(r, 2, 3);
    EXPECT(r, F_INT32, 0, 11, 21, 31, 12, 22, 32);
  }
}

static void test_scalar_forms(void) {
  /* Decision 1: a scalar counts as its suffix's type. */
  EXPECT(fadd_ci(i32s(), 2), F_INT32, 0, 8, -1, 2);
  EXPECT(fadd_cl(i32s(), 2L), F_INT64, 0, 8, -1, 2);
  EXPECT(fadd_cf(i32s(), 0.5f), F_FLOAT32, 0, 6.5, -2.5, 0.5);
  EXPECT(fadd_cd(f32s(), 0.25), F_FLOAT64, 0, 1.75, -1.75, 4.25);
  EXPECT(fadd_ci(f32s(), 1), F_FLOAT32, 0, 2.5, -1, 5);

  EXPECT(fsub_ci(i32s(), 1), F_INT32, 0, 5, -4, -1);
  EXPECT(fsub_cl(i32s(), 1L), F_INT64, 0, 5, -4, -1);
  EXPECT(fsub_cf(i32s(), 0.5f), F_FLOAT32, 0, 5.5, -3.5, -0.5);
  EXPECT(fsub_cd(i32s(), 0.5), F_FLOAT64, 0, 5.5, -3.5, -0.5);
  EXPECT(fsub_ici(10, i32s()), F_INT32, 0, 4, 13, 10);
  EXPECT(fsub_icl(10L, i32s()), F_INT64, 0, 4, 13, 10);
  EXPECT(fsub_icf(0.5f, i32s()), F_FLOAT32, 0, -5.5, 3.5, 0.5);
  EXPECT(fsub_icd(2.5, i32s()), F_FLOAT64, 0, -3.5, 5.5, 2.5);

  EXPECT(fdiv_ci(i32s(), 4), F_INT32, 0, 1, 0, 0);
  EXPECT(fdiv_cl(i32s(), 0L), F_INT64, 0, 0, 0, 0);
  EXPECT(fdiv_cf(i32s(), 4.0f), F_FLOAT32, 0, 1.5, -0.75, 0);
  EXPECT(fdiv_cd(f32s(), 2.0), F_FLOAT64, 0, 0.75, -1, 2);
  EXPECT(fdiv_ici(12, i32s()), F_INT32, 0, 2, -4, 0);
  EXPECT(fdiv_icl(12L, i32s()), F_INT64, 0, 2, -4, 0);
  EXPECT(fdiv_icf(3.0f, f32s()), F_FLOAT32, 1e-6, 2, -1.5, 0.75);
  EXPECT(fdiv_icd(1.0, f64s()), F_FLOAT64, 0, 2, 0.5, 0.125);

  EXPECT(fmul_ci(i32s(), 2), F_INT32, 0, 12, -6, 0);
  EXPECT(fmul_cl(i32s(), 3L), F_INT64, 0, 18, -9, 0);
  EXPECT(fmul_cf(i32s(), 0.5f), F_FLOAT32, 0, 3, -1.5, 0);
  EXPECT(fmul_cd(f32s(), 2.0), F_FLOAT64, 0, 3, -4, 8);

  EXPECT(fpow_ci(i32s(), 2), F_INT32, 0, 36, 9, 0);
  EXPECT(fpow_cl(i32s(), 3L), F_INT64, 0, 216, -27, 0);
  EXPECT(fpow_cf(f64s(), 0.5f), F_FLOAT64, 1e-12, sqrt(0.5), sqrt(2.0), sqrt(8.0));
  EXPECT(fpow_cd(f32s(), 2.0), F_FLOAT64, 1e-12, 2.25, 4, 16);

#ifndef FLINT_NO_GENERIC_MACROS
  /* The C11 generic forms pick the function from the argument types. */
  EXPECT(fadd(i32s(), 1), F_INT32, 0, 7, -2, 1);
  EXPECT(fadd(i32s(), 1L), F_INT64, 0, 7, -2, 1);
  EXPECT(fmul(i32s(), 2.0f), F_FLOAT32, 0, 12, -6, 0);
  EXPECT(fmul(i32s(), 2.0), F_FLOAT64, 0, 12, -6, 0);
  EXPECT(fsub(1, i32s()), F_INT32, 0, -5, 4, 1);
  EXPECT(fsub(i32s(), i32s()), F_INT32, 0, 0, 0, 0);
  EXPECT(fdiv(6.0, f64s()), F_FLOAT64, 0, 12, 3, 0.75);
  EXPECT(fpow(i32s(), 2), F_INT32, 0, 36, 9, 0);
  EXPECT(fless(i32s(), 1), F_INT32, 0, 0, 1, 1);
  EXPECT(fgreater(i32s(), i32s()), F_INT32, 0, 0, 0, 0);
  EXPECT(fequal(i32s(), 0.0), F_INT32, 0, 0, 0, 1);
#endif
}

static void test_unary(void) {
  const double e = exp(1.0);
  EXPECT(flog(KT_NODE(F_FLOAT32, KT_SHAPE(2), 1, 2.718281828)), F_FLOAT32, 1e-6, 0, 1);
  EXPECT(flog(KT_NODE(F_INT32, KT_SHAPE(2), 1, 10)), F_FLOAT64, 1e-15, 0, log(10.0));
  EXPECT(flog2(KT_NODE(F_INT64, KT_SHAPE(2), 1, 8)), F_FLOAT64, 1e-15, 0, 3);
  EXPECT(flog10(KT_NODE(F_FLOAT64, KT_SHAPE(2), 1, 1000)), F_FLOAT64, 1e-15, 0, 3);
  EXPECT(fsin(KT_NODE(F_FLOAT64, KT_SHAPE(2), 0, 1)), F_FLOAT64, 1e-15, 0, sin(1.0));
  EXPECT(fcos(KT_NODE(F_FLOAT64, KT_SHAPE(2), 0, 1)), F_FLOAT64, 1e-15, 1, cos(1.0));
  EXPECT(ftan(KT_NODE(F_FLOAT64, KT_SHAPE(2), 0, 1)), F_FLOAT64, 1e-15, 0, tan(1.0));
  EXPECT(fasin(KT_NODE(F_FLOAT64, KT_SHAPE(2), 0, 1)), F_FLOAT64, 1e-15, 0, asin(1.0));
  EXPECT(facos(KT_NODE(F_FLOAT64, KT_SHAPE(2), 1, 0)), F_FLOAT64, 1e-15, 0, acos(0.0));
  EXPECT(fatan(KT_NODE(F_FLOAT64, KT_SHAPE(2), 0, 1)), F_FLOAT64, 1e-15, 0, atan(1.0));
  EXPECT(fsqrt_g(KT_NODE(F_INT32, KT_SHAPE(2), 4, 2)), F_FLOAT64, 1e-15, 2, sqrt(2.0));
  EXPECT(fexp(KT_NODE(F_FLOAT64, KT_SHAPE(2), 0, 1)), F_FLOAT64, 1e-15, 1, e);
  EXPECT(fneg(KT_NODE(F_INT64, KT_SHAPE(2), 3, -4)), F_INT64, 0, -3, 4);
  EXPECT(fabs_g(KT_NODE(F_FLOAT32, KT_SHAPE(3), -1.5, 0, 2)), F_FLOAT32, 0, 1.5, 0, 2);
  /* Decision 5: sign is F_INT32, 1 for a >= 0 (0 included); even needs integers. */
  EXPECT(fsign(KT_NODE(F_FLOAT64, KT_SHAPE(3), -2.5, 0, 3)), F_INT32, 0, -1, 1, 1);
  EXPECT(fsign(KT_NODE(F_INT32, KT_SHAPE(3), -2, 0, 3)), F_INT32, 0, -1, 1, 1);
  EXPECT(feven(KT_NODE(F_INT64, KT_SHAPE(4), 1, 2, -4, 0)), F_INT32, 0, 0, 1, 1, 1);
}

static void test_comparisons(void) {
  FGraphNode *a;
  /* Decision 4: F_INT32 results, fequal is 1 where a == b. */
  EXPECT(fless_g(i32s(), KT_NODE(F_FLOAT64, KT_SHAPE(3), 6, 0, -1)), F_INT32, 0, 0, 1, 0);
  EXPECT(fgreater_g(i32s(), KT_NODE(F_FLOAT64, KT_SHAPE(3), 6, 0, -1)), F_INT32, 0, 0, 0, 1);
  EXPECT(fequal_g(i32s(), KT_NODE(F_FLOAT64, KT_SHAPE(3), 6, 0, -1)), F_INT32, 0, 1, 0, 0);
  EXPECT(fless_ci(i32s(), 0), F_INT32, 0, 0, 1, 0);
  EXPECT(fless_cl(i32s(), 6L), F_INT32, 0, 0, 1, 1);
  EXPECT(fless_cf(f32s(), 1.5f), F_INT32, 0, 0, 1, 0);
  EXPECT(fless_cd(f32s(), 1.6), F_INT32, 0, 1, 1, 0);
  EXPECT(fgreater_ci(i32s(), 0), F_INT32, 0, 1, 0, 0);
  EXPECT(fgreater_cl(i32s(), -3L), F_INT32, 0, 1, 0, 1);
  EXPECT(fgreater_cf(f32s(), 1.5f), F_INT32, 0, 0, 0, 1);
  EXPECT(fgreater_cd(f32s(), -2.5), F_INT32, 0, 1, 1, 1);
  EXPECT(fequal_ci(i32s(), -3), F_INT32, 0, 0, 1, 0);
  EXPECT(fequal_cl(i32s(), 0L), F_INT32, 0, 0, 0, 1);
  EXPECT(fequal_cf(f32s(), 1.5f), F_INT32, 0, 1, 0, 0);
  EXPECT(fequal_cd(f32s(), 4.0), F_INT32, 0, 0, 0, 1);

  EXPECT(fmin_g(i32s(), KT_NODE(F_INT32, KT_SHAPE(3), 1, 1, 1)), F_INT32, 0, 1, -3, 0);
  EXPECT(fmin_ci(i32s(), 1), F_INT32, 0, 1, -3, 0);
  EXPECT(fmin_cl(i32s(), 1L), F_INT64, 0, 1, -3, 0);
  EXPECT(fmin_cf(i32s(), 0.5f), F_FLOAT32, 0, 0.5, -3, 0);
  EXPECT(fmin_cd(f32s(), 0.0), F_FLOAT64, 0, 0, -2, 0);
  EXPECT(fmax_g(i32s(), KT_NODE(F_INT32, KT_SHAPE(3), 1, 1, 1)), F_INT32, 0, 6, 1, 1);
  EXPECT(fmax_ci(i32s(), 1), F_INT32, 0, 6, 1, 1);
  EXPECT(fmax_cl(i32s(), 1L), F_INT64, 0, 6, 1, 1);
  EXPECT(fmax_cf(i32s(), 0.5f), F_FLOAT32, 0, 6, 0.5, 0.5);
  EXPECT(fmax_cd(f32s(), 0.0), F_FLOAT64, 0, 1.5, 0, 4);
  /* A comparison node as an operand. */
  a = fmul_g(fgreater_ci(i32s(), 0), i32s());
  EXPECT(a, F_INT32, 0, 6, 0, 0);
}

static void test_matmul_and_reductions(void) {
  FGraphNode *r;
  r = fmatmul(KT_NODE(F_FLOAT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6),
              KT_NODE(F_FLOAT32, KT_SHAPE(3, 2), 1, 0, 0, 1, 1, 1));
  CHECK_SHAPE(r, 2, 2);
  CHECK(r->operation.op_type == FMATMUL);
  EXPECT(r, F_FLOAT32, 0, 4, 5, 10, 11);
  /* Batch dimensions broadcast: [2,2,3] x [3,1] -> [2,2,1]. */
  r = fmatmul(KT_NODE(F_INT32, KT_SHAPE(2, 2, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12),
              KT_NODE(F_INT64, KT_SHAPE(3, 1), 1, 1, 1));
  CHECK_SHAPE(r, 2, 2, 1);
  EXPECT(r, F_INT64, 0, 6, 15, 24, 33);

  /* The document's examples. */
  {
    FGraphNode *a = KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    a->reference_counter++; /* reused below */
    r = freduce_sum(a, 0);
    CHECK_SHAPE(r, 3);
    CHECK(r->operation.op_type == FREDUCE_SUM);
    EXPECT(r, F_INT32, 0, 5, 7, 9);
    EXPECT(freduce_sum(a, 1), F_INT32, 0, 6, 15);
    EXPECT(freduce_mul(a, 0), F_INT32, 0, 4, 10, 18);
    EXPECT(freduce_mul(a, 1), F_INT32, 0, 6, 120);
    EXPECT(freduce_sum(a, -1), F_INT32, 0, 6, 15); /* negative: from the end */
    a->reference_counter--;
    fFreeGraph(a);
  }
  EXPECT(freduce_min(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 32, 3, 4, 5, 3), 0), F_INT32, 0, 1, 5, 3);
  EXPECT(freduce_min(KT_NODE(F_INT32, KT_SHAPE(2, 3), 9, 2, 3, -1, 5, 6), 1), F_INT32, 0, 2, -1);
  EXPECT(freduce_max(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 32, 3, 4, 5, 3), 0), F_INT32, 0, 4, 32, 3);
  EXPECT(freduce_max(KT_NODE(F_FLOAT64, KT_SHAPE(2, 3), 9, 2, 3, -1, 5, 6), 1), F_FLOAT64, 0, 9, 6);
  /* Decision 11: reducing a 1-D node gives shape [1]. */
  r = freduce_sum(KT_NODE(F_FLOAT32, KT_SHAPE(4), 1, 2, 3, 4), 0);
  CHECK_SHAPE(r, 1);
  EXPECT(r, F_FLOAT32, 0, 10);
  r = freduce_max(KT_NODE(F_INT64, KT_SHAPE(3), 1, 7, 3), 0);
  CHECK_SHAPE(r, 1);
  EXPECT(r, F_INT64, 0, 7);
}

static void test_shape_ops(void) {
  FGraphNode *r;
  r = fflatten(KT_NODE(F_INT32, KT_SHAPE(2, 2, 3), 3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9));
  CHECK_SHAPE(r, 12);
  CHECK(r->operation.op_type == FLATTEN);
  EXPECT(r, F_INT32, 0, 3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9);
  r = fflatten_dimension(KT_NODE(F_INT32, KT_SHAPE(2, 2, 3), 3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9), 1);
  CHECK_SHAPE(r, 4, 3);
  EXPECT(r, F_INT32, 0, 3, 1, 4, 2, 1, 5, 0, 4, 2, 4, 7, 9);

  r = fconvert(KT_NODE(F_FLOAT32, KT_SHAPE(3), 1.7, -1.7, 3), F_INT32);
  CHECK(r->operation.op_type == FCONVERSION);
  EXPECT(r, F_INT32, 0, 1, -1, 3);
  EXPECT(fconvert(KT_NODE(F_INT32, KT_SHAPE(2), 1, 2), F_FLOAT64), F_FLOAT64, 0, 1, 2);
  EXPECT(fconvert(KT_NODE(F_INT32, KT_SHAPE(2), 1, 2), F_INT64), F_INT64, 0, 1, 2);
  EXPECT(fconvert(KT_NODE(F_FLOAT64, KT_SHAPE(2), 0.5, 2), F_FLOAT32), F_FLOAT32, 0, 0.5, 2);

  {
    size_t shape[] = {3, 2};
    r = freshape(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), shape, 2);
    CHECK_SHAPE(r, 3, 2);
    EXPECT(r, F_INT32, 0, 1, 2, 3, 4, 5, 6);
  }
  {
    long start[] = {0, 1}, end[] = {2, 3}, neg_start[] = {-1, -1}, neg_end[] = {-3, -4};
    long step[] = {1, 2}, neg_step[] = {-1, -2};
    r = fslice(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), start, end);
    CHECK_SHAPE(r, 2, 2);
    CHECK(r->operation.op_type == FSLICE);
    EXPECT(r, F_INT32, 0, 2, 3, 5, 6);
    r = fslice_step(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), start, end, step);
    CHECK_SHAPE(r, 2, 1);
    EXPECT(r, F_INT32, 0, 2, 5);
    /* A negative step walks backwards from start. */
    r = fslice_step(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), neg_start, neg_end,
                    neg_step);
    CHECK_SHAPE(r, 2, 2);
    EXPECT(r, F_INT32, 0, 6, 4, 3, 1);
  }
  {
    size_t shape[] = {3, 4}, at[] = {1, 1};
    r = fextend(KT_NODE(F_INT32, KT_SHAPE(2, 2), 1, 2, 3, 4), shape, at);
    CHECK_SHAPE(r, 3, 4);
    CHECK(r->operation.op_type == FEXTEND);
    EXPECT(r, F_INT32, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0);
  }
  {
    /* Decision 8: step-1 zeros between elements; a negative step reverses. */
    size_t shape[] = {5}, at[] = {0};
    long step[] = {2}, back[] = {-2};
    EXPECT(fextend_step(KT_NODE(F_INT32, KT_SHAPE(3), 1, 2, 3), shape, at, step), F_INT32, 0, 1, 0,
           2, 0, 3);
    EXPECT(fextend_step(KT_NODE(F_INT32, KT_SHAPE(3), 1, 2, 3), shape, at, back), F_INT32, 0, 3, 0,
           2, 0, 1);
  }
  {
    FGraphNode *a = KT_NODE(F_INT32, KT_SHAPE(2, 2), 0, 1, 2, 3);
    FGraphNode *b = KT_NODE(F_INT32, KT_SHAPE(2, 2), 4, 5, 6, 7);
    a->reference_counter++;
    b->reference_counter++;
    r = fconcat(a, b, 0);
    CHECK_SHAPE(r, 4, 2);
    CHECK(r->operation.op_type == FCONCAT);
    EXPECT(r, F_INT32, 0, 0, 1, 2, 3, 4, 5, 6, 7);
    r = fconcat(a, b, 1);
    CHECK_SHAPE(r, 2, 4);
    EXPECT(r, F_INT32, 0, 0, 1, 4, 5, 2, 3, 6, 7);
    a->reference_counter--;
    b->reference_counter--;
    fFreeGraph(a);
    fFreeGraph(b);
  }
  r = fexpand(KT_NODE(F_INT32, KT_SHAPE(2), 1, 2), 0, 3);
  CHECK_SHAPE(r, 3, 2);
  EXPECT(r, F_INT32, 0, 1, 2, 1, 2, 1, 2);
  r = fexpand(KT_NODE(F_INT32, KT_SHAPE(2), 1, 2), 1, 3);
  CHECK_SHAPE(r, 2, 3);
  EXPECT(r, F_INT32, 0, 1, 1, 1, 2, 2, 2);
  {
    /* Decision 6: a count of extra copies (the document's example [2, 3] counted all copies;
     * Flint's library, its C++ wrapper and programs count the copies added). */
    int reps[] = {1, 2};
    r = frepeat(KT_NODE(F_INT32, KT_SHAPE(2, 2), 0, 1, 2, 3), reps);
    CHECK_SHAPE(r, 4, 6);
    CHECK(r->operation.op_type == FREPEAT);
    EXPECT(r, F_INT32, 0, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3);
  }
  {
    /* Decision 14: result dimension i is input dimension perm[i]. */
    int perm[] = {1, 0};
    int perm3[] = {2, 0, 1};
    r = ftranspose(KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6), perm);
    CHECK_SHAPE(r, 3, 2);
    EXPECT(r, F_INT32, 0, 1, 4, 2, 5, 3, 6);
    r = ftranspose(KT_NODE(F_INT32, KT_SHAPE(1, 2, 3), 1, 2, 3, 4, 5, 6), perm3);
    CHECK_SHAPE(r, 3, 1, 2);
    EXPECT(r, F_INT32, 0, 1, 4, 2, 5, 3, 6);
  }
}

static void test_windows_and_indexing(void) {
  FGraphNode *r;
  {
    unsigned int steps[] = {1};
    /* [4,1] with a [2,1] kernel -> [3]. */
    r = fconvolve(KT_NODE(F_FLOAT32, KT_SHAPE(4, 1), 1, 2, 3, 4), KT_NODE(F_FLOAT32, KT_SHAPE(2, 1), 1, 1),
                  steps);
    CHECK_SHAPE(r, 3);
    CHECK(r->operation.op_type == FCONVOLVE);
    EXPECT(r, F_FLOAT32, 0, 3, 5, 7);
  }
  {
    unsigned int steps[] = {1, 1}, steps2[] = {2, 1};
    r = fconvolve(KT_NODE(F_INT32, KT_SHAPE(3, 3, 1), 1, 2, 3, 4, 5, 6, 7, 8, 9),
                  KT_NODE(F_INT32, KT_SHAPE(2, 2, 1), 1, 1, 1, 1), steps);
    CHECK_SHAPE(r, 2, 2);
    EXPECT(r, F_INT32, 0, 12, 16, 24, 28);
    /* Steps: floor((3-2)/2)+1 = 1 row. */
    r = fconvolve(KT_NODE(F_INT32, KT_SHAPE(3, 3, 1), 1, 2, 3, 4, 5, 6, 7, 8, 9),
                  KT_NODE(F_INT32, KT_SHAPE(2, 2, 1), 1, 1, 1, 1), steps2);
    CHECK_SHAPE(r, 1, 2);
    EXPECT(r, F_INT32, 0, 12, 16);
    /* Two filters (an n+1-dimensional kernel): the filter index is the last dimension. */
    r = fconvolve(KT_NODE(F_INT32, KT_SHAPE(3, 3, 1), 1, 2, 3, 4, 5, 6, 7, 8, 9),
                  KT_NODE(F_INT32, KT_SHAPE(2, 2, 2, 1), 1, 1, 1, 1, 1, 0, 0, 0), steps);
    CHECK_SHAPE(r, 2, 2, 2);
    EXPECT(r, F_INT32, 0, 12, 1, 16, 2, 24, 4, 28, 5);
  }
  /* A 1-D convolution with a 1-D kernel is a dot product, shape [1]. */
  r = fconvolve(KT_NODE(F_FLOAT64, KT_SHAPE(3), 1, 2, 3), KT_NODE(F_FLOAT64, KT_SHAPE(3), 1, 1, 2), NULL);
  CHECK_SHAPE(r, 1);
  EXPECT(r, F_FLOAT64, 0, 9);

  /* findex (decision 17): the document's first example. */
  r = findex(KT_NODE(F_INT32, KT_SHAPE(3, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
             KT_NODE(F_INT32, KT_SHAPE(2), 1, 0));
  CHECK_SHAPE(r, 2, 2, 2);
  CHECK(r->operation.op_type == FINDEX);
  EXPECT(r, F_INT32, 0, 4, 5, 6, 7, 0, 1, 2, 3);
  /* Indices [3,1] select along dimension 1 within each of the 3 blocks. */
  r = findex(KT_NODE(F_INT32, KT_SHAPE(3, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
             KT_NODE(F_INT64, KT_SHAPE(3, 1), 0, 1, 0));
  CHECK_SHAPE(r, 3, 1, 2);
  EXPECT(r, F_INT32, 0, 0, 1, 6, 7, 8, 9);
  r = findex(KT_NODE(F_INT32, KT_SHAPE(3, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
             KT_NODE(F_INT32, KT_SHAPE(3, 2), 0, 0, 1, 0, 0, 1));
  CHECK_SHAPE(r, 3, 2, 2);
  EXPECT(r, F_INT32, 0, 0, 1, 0, 1, 6, 7, 4, 5, 8, 9, 10, 11);

  /* findex_set (decision 9): the document's examples. */
  r = findex_set(KT_NODE(F_INT32, KT_SHAPE(4, 2), 0, 1, 2, 3, 4, 5, 6, 7),
                 KT_NODE(F_INT32, KT_SHAPE(3, 2), 4, 5, 6, 7, 8, 9), KT_NODE(F_INT32, KT_SHAPE(3), 0, 0, 2));
  CHECK_SHAPE(r, 4, 2);
  CHECK(r->operation.op_type == FSET_INDEX);
  CHECK(r->num_predecessor == 3);
  EXPECT(r, F_INT32, 0, 10, 12, 2, 3, 8, 9, 6, 7);
  r = findex_set(KT_NODE(F_INT32, KT_SHAPE(4, 2), 0, 1, 2, 3, 4, 5, 6, 7),
                 KT_NODE(F_INT32, KT_SHAPE(4, 2), 4, 5, 6, 7, 8, 9, 10, 11),
                 KT_NODE(F_INT32, KT_SHAPE(4, 2), -1, 0, 1, 1, 1, 0, 1, -1));
  EXPECT(r, F_INT32, 0, 5, 1, 2, 13, 9, 8, 6, 10);

  {
    /* The document's first fsliding_window example and its inverse. */
    size_t size[] = {3, 2}, shape[] = {4, 2};
    unsigned int steps[] = {1, 1};
    FGraphNode *w = fsliding_window(KT_NODE(F_INT32, KT_SHAPE(4, 2), 0, 1, 2, 3, 4, 5, 6, 7), size, steps);
    CHECK_SHAPE(w, 2, 3, 2);
    CHECK(w->operation.op_type == FSLIDING_WINDOW);
    CHECK_VALUES(w, 0, 0, 1, 2, 3, 4, 5, 2, 3, 4, 5, 6, 7);
    r = funslide_window(w, shape, steps);
    CHECK_SHAPE(r, 4, 2);
    CHECK(r->operation.op_type == FUNSLIDE_WINDOW);
    EXPECT(r, F_INT32, 0, 0, 1, 4, 6, 8, 10, 6, 7);
  }
  {
    /* The document's second example: windows ordered with the innermost dimension fastest. */
    size_t size[] = {2, 2, 2};
    unsigned int steps[] = {2, 1, 2};
    FGraphNode *w = fsliding_window(
        KT_NODE(F_INT32, KT_SHAPE(4, 3, 3), 0, 1, 2, 1, 2, 3, 2, 3, 4, 1, 2, 3, 2, 3, 4, 3, 4, 5, 2, 3, 4,
                3, 4, 5, 4, 5, 6, 3, 4, 5, 4, 5, 6, 5, 6, 7),
        size, steps);
    CHECK_SHAPE(w, 4, 2, 2, 2);
    EXPECT(w, F_INT32, 0, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 3,
           4, 4, 5, 4, 5, 5, 6);
  }
  {
    size_t window[] = {2};
    unsigned int step[] = {2};
    r = fpooling_sum(KT_NODE(F_INT32, KT_SHAPE(4, 2), 0, 1, 2, 3, 4, 5, 6, 7), window, step);
    CHECK_SHAPE(r, 2);
    CHECK(r->operation.op_type == FPOOLING_SUM);
    EXPECT(r, F_INT32, 0, 6, 22);
    r = fpooling_max(KT_NODE(F_FLOAT32, KT_SHAPE(4, 2), 0, 1, 2, 3, 9, 5, 6, 7), window, step);
    CHECK_SHAPE(r, 2);
    CHECK(r->operation.op_type == FPOOLING_MAX);
    EXPECT(r, F_FLOAT32, 0, 3, 9);
    /* A 1-D node pools completely: shape [1]. */
    r = fpooling_sum(KT_NODE(F_INT32, KT_SHAPE(3), 1, 2, 3), NULL, NULL);
    CHECK_SHAPE(r, 1);
    EXPECT(r, F_INT32, 0, 6);
  }
  {
    /* fpermutate shuffles the slices along an axis. */
    FGraphNode *p = fCalculateResult(fpermutate(farange((size_t[]){50, 2}, 2, 0), 0));
    CHECK(p != NULL && p->operation.op_type == FPERMUTATE);
    CHECK_SHAPE(p, 50, 2);
    int seen[50] = {0}, moved = 0;
    for (size_t i = 0; i < 50; ++i) {
      const long v = (long)kt_value(p, 2 * i);
      CHECK(v == (long)kt_value(p, 2 * i + 1));
      if (v >= 0 && v < 50) seen[v]++;
      moved += v != (long)i;
    }
    for (int i = 0; i < 50; ++i) CHECK(seen[i] == 1);
    CHECK(moved > 0);
    fFreeGraph(p);
  }
  {
    /* Decision 10: fdropout zeroes with probability p, no rescaling. */
    size_t shape[] = {1000};
    FGraphNode *kept = fdropout(fconstant_f(2.0f, shape, 1), 0.0);
    FGraphNode *gone = fdropout(fconstant_f(2.0f, shape, 1), 1.0);
    FGraphNode *half = fCalculateResult(fdropout(fconstant_f(2.0f, shape, 1), 0.5));
    CHECK(half != NULL && half->operation.op_type == FDROPOUT && half->operation.data_type == F_FLOAT32);
    CHECK(fCalculateResult(kept) != NULL && fCalculateResult(gone) != NULL);
    int zeros = 0, twos = 0;
    for (size_t i = 0; i < 1000; ++i) {
      CHECK(kt_value(kept, i) == 2.0);
      CHECK(kt_value(gone, i) == 0.0);
      zeros += kt_value(half, i) == 0.0;
      twos += kt_value(half, i) == 2.0;
    }
    CHECK(zeros + twos == 1000);
    CHECK(zeros > 400 && zeros < 600);
    fFreeGraph(kept);
    fFreeGraph(gone);
    fFreeGraph(half);
  }
}

void test_ops(void) {
  test_binary();
  test_scalar_forms();
  test_unary();
  test_comparisons();
  test_matmul_and_reductions();
  test_shape_ops();
  test_windows_and_indexing();
}
