/* What programs written for the Flint library (and its C++ wrapper over flint.h) rely on, in C:
 * repetitions counted as extra copies, gradient types, ties in min/max gradients, the scalar
 * operand as a constant predecessor, and the binary layout of flint.h's structs. Run on every
 * executor (ctest's kiln_c_tests.*), the GPU one included. */
#include <stddef.h>
#include <stdint.h>

#include "check.h"

/* frepeat(a, {0, 1, 2}) as the wrapper calls it: [d0, 2*d1, 3*d2] (decision 6). */
static void test_repeat_counts_extra_copies(void) {
  FGraphNode *a = KT_NODE(F_INT32, KT_SHAPE(1, 2, 1), 1, 2);
  int reps[] = {0, 1, 2};
  FGraphNode *r = frepeat(a, reps);
  CHECK(r != NULL);
  CHECK_SHAPE(r, 1, 4, 3);
  CHECK_VALUES(r, 0, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2);
  int none[] = {0, 0, 0};
  FGraphNode *same = frepeat(a, none);
  CHECK_SHAPE(same, 1, 2, 1);
  CHECK_VALUES(same, 0, 1, 2);
  CHECK_ERROR(frepeat(a, (int[]){0, -1, 0}) == NULL, INVALID_SELECT, "frepeat", "negative");
  fFreeGraph(r);
  fFreeGraph(same);

  /* The gradient follows: each element of x gets one 1 per copy. */
  fStartGradientContext();
  FGraphNode *x = KT_NODE(F_FLOAT64, KT_SHAPE(2), 1, 2);
  fMarkGradientVariable(x);
  int twice[] = {2};
  FGraphNode *y = freduce_sum(fmul_g(frepeat(x, twice), frepeat(x, twice)), 0);
  fStopGradientContext();
  FGraphNode *g = fCalculateGradient(y, x); /* d/dx sum over 3 copies of x^2 = 6x */
  CHECK_VALUES(g, 1e-12, 6, 12);
  fFreeGraph(g);
  fFreeGraph(y);
}

/* The gradient's type is the larger of the two, F_FLOAT64 for two integers (decision 18). */
static void test_gradient_types(void) {
  static const struct {
    enum FType y, x, gradient;
  } cases[] = {
      {F_FLOAT32, F_INT64, F_FLOAT32},   {F_FLOAT32, F_INT32, F_FLOAT32},
      {F_FLOAT32, F_FLOAT64, F_FLOAT64}, {F_FLOAT64, F_FLOAT32, F_FLOAT64},
      {F_INT32, F_INT64, F_FLOAT64},     {F_INT64, F_INT32, F_FLOAT64},
      {F_FLOAT32, F_FLOAT32, F_FLOAT32},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    fStartGradientContext();
    FGraphNode *x = KT_NODE(cases[i].x, KT_SHAPE(2), 3, 4);
    fMarkGradientVariable(x);
    /* y = 7 * convert(x) (of y's type), so dy/dx = 7. */
    FGraphNode *y = fmul_ci(fconvert(x, cases[i].y), 7);
    fStopGradientContext();
    FGraphNode *g = fCalculateGradient(y, x);
    CHECK(g != NULL && g->operation.data_type == cases[i].gradient);
    if (g != NULL && fCalculateResult(g) != NULL) {
      /* Read as the type the rule gives, as a program does. */
      const void *data = g->result_data->data;
      double first = 0;
      switch (cases[i].gradient) {
        case F_FLOAT32: first = ((const float *)data)[0]; break;
        case F_FLOAT64: first = ((const double *)data)[0]; break;
        case F_INT32: first = ((const int32_t *)data)[0]; break;
        case F_INT64: first = (double)((const int64_t *)data)[0]; break;
      }
      CHECK_NEAR(first, 7, 0);
    }
    FGraphNode *vars[1] = {x};
    FGraphNode *grads[1] = {NULL};
    CHECK(fCalculateGradients(y, vars, 1, grads) == NO_ERROR);
    CHECK(grads[0] != NULL && grads[0]->operation.data_type == cases[i].gradient);
    if (grads[0] != NULL) fFreeGraph(grads[0]);
    if (g != NULL) fFreeGraph(g);
    fFreeGraph(y);
  }
}

/* Every element equal to a reduced max/min gets the whole gradient; fmax/fmin give a tie to
 * the first operand (decision 19). */
static void test_ties(void) {
  fStartGradientContext();
  FGraphNode *x = KT_NODE(F_FLOAT64, KT_SHAPE(2, 3), 3, 1, 3, 0, 0, -2);
  FGraphNode *b = KT_NODE(F_FLOAT64, KT_SHAPE(2, 3), 3, 2, 1, 0, 5, -2);
  fMarkGradientVariable(x);
  fMarkGradientVariable(b);
  FGraphNode *max_rows = freduce_sum(freduce_max(x, 1), 0);
  FGraphNode *min_rows = freduce_sum(freduce_min(x, 1), 0);
  FGraphNode *maxima = freduce_sum(freduce_sum(fmax_g(x, b), 1), 0);
  FGraphNode *minima = freduce_sum(freduce_sum(fmin_g(x, b), 1), 0);
  FGraphNode *scalar_max = freduce_sum(freduce_sum(fmax_cd(x, 3.0), 1), 0);
  fStopGradientContext();

  FGraphNode *g = fCalculateGradient(max_rows, x);
  CHECK_VALUES(g, 0, 1, 0, 1, 1, 1, 0);
  fFreeGraph(g);
  g = fCalculateGradient(min_rows, x);
  CHECK_VALUES(g, 0, 0, 1, 0, 0, 0, 1);
  fFreeGraph(g);
  /* x = (3, 1, 3, 0, 0, -2), b = (3, 2, 1, 0, 5, -2): ties at 0, 3 and 5. */
  g = fCalculateGradient(maxima, x);
  CHECK_VALUES(g, 0, 1, 0, 1, 1, 0, 1);
  fFreeGraph(g);
  g = fCalculateGradient(maxima, b);
  CHECK_VALUES(g, 0, 0, 1, 0, 0, 1, 0);
  fFreeGraph(g);
  g = fCalculateGradient(minima, x);
  CHECK_VALUES(g, 0, 1, 1, 0, 1, 1, 1);
  fFreeGraph(g);
  g = fCalculateGradient(minima, b);
  CHECK_VALUES(g, 0, 0, 0, 1, 0, 0, 0);
  fFreeGraph(g);
  g = fCalculateGradient(scalar_max, x); /* x == 3 ties with the scalar: x gets it */
  CHECK_VALUES(g, 0, 1, 0, 1, 0, 0, 0);
  fFreeGraph(g);
  fFreeGraph(max_rows);
  fFreeGraph(min_rows);
  fFreeGraph(maxima);
  fFreeGraph(minima);
  fFreeGraph(scalar_max);
}

/* A scalar operand is a constant predecessor of the other operand's shape (decision 20). */
static void test_scalar_predecessors(void) {
  FGraphNode *a = KT_NODE(F_FLOAT32, KT_SHAPE(2, 2), 1, 2, 3, 4);
  FGraphNode *r = fadd_ci(a, 7);
  CHECK(r->num_predecessor == 2 && r->predecessors[0] == a);
  FGraphNode *c = r->predecessors[1];
  CHECK(c->operation.op_type == FGEN_CONSTANT && c->operation.data_type == F_INT32);
  CHECK_SHAPE(c, 2, 2);
  CHECK_VALUES(c, 0, 7, 7, 7, 7);
  CHECK(c->reference_counter == 1);
  CHECK(r->operation.data_type == F_FLOAT32);
  CHECK_VALUES(r, 0, 8, 9, 10, 11);
  /* The scalar on the left is the first predecessor. */
  FGraphNode *l = fsub_icd(10.0, a);
  CHECK(l->num_predecessor == 2 && l->predecessors[1] == a);
  CHECK(l->predecessors[0]->operation.op_type == FGEN_CONSTANT);
  CHECK(l->predecessors[0]->operation.data_type == F_FLOAT64);
  CHECK_VALUES(l->predecessors[0], 0, 10, 10, 10, 10);
  CHECK_VALUES(l, 0, 9, 8, 7, 6);
  /* Walking the graph as a wrapper does: every predecessor is a live node. */
  FGraphNode *chain = fmul_cf(fdiv_cl(r, 2L), 3.0f);
  int constants = 0;
  for (FGraphNode *n = chain; n != NULL && n->num_predecessor == 2;) {
    CHECK(n->predecessors[1]->operation.op_type == FGEN_CONSTANT);
    ++constants;
    n = n->predecessors[0];
  }
  CHECK(constants == 3);
  CHECK(a->reference_counter == 2);
  fFreeGraph(chain); /* frees r and the three constants */
  CHECK(a->reference_counter == 1);
  fFreeGraph(l); /* and a with it */
}

/* The struct layout of Flint's header on x86-64 (decision 21), written out. */
static void test_layout(void) {
#if defined(__x86_64__) || defined(_M_X64)
  CHECK(sizeof(FGraphNode) == 72);
  CHECK(offsetof(FGraphNode, num_predecessor) == 0);
  CHECK(offsetof(FGraphNode, predecessors) == 8);
  CHECK(offsetof(FGraphNode, operation) == 16);
  CHECK(offsetof(FGraphNode, reference_counter) == 48);
  CHECK(offsetof(FGraphNode, result_data) == 56);
  CHECK(offsetof(FGraphNode, gradient_data) == 64);
  CHECK(sizeof(FOperation) == 32);
  CHECK(offsetof(FOperation, shape) == 0);
  CHECK(offsetof(FOperation, additional_data) == 8);
  CHECK(offsetof(FOperation, op_type) == 16);
  CHECK(offsetof(FOperation, data_type) == 20);
  CHECK(offsetof(FOperation, dimensions) == 24);
  CHECK(offsetof(FOperation, broadcasting_mode) == 28);
  CHECK(sizeof(FResultData) == 24);
  CHECK(offsetof(FResultData, mem_id) == 0);
  CHECK(offsetof(FResultData, data) == 8);
  CHECK(offsetof(FResultData, num_entries) == 16);
  CHECK(sizeof(FStore) == 24);
  CHECK(offsetof(FStore, mem_id) == 0);
  CHECK(offsetof(FStore, data) == 8);
  CHECK(offsetof(FStore, num_entries) == 16);
  CHECK(sizeof(FSlice) == 24 && offsetof(FSlice, end) == 8 && offsetof(FSlice, step) == 16);
  CHECK(sizeof(FExtend) == 16 && offsetof(FExtend, step) == 8);
  CHECK(sizeof(FSlidingWindow) == 16 && offsetof(FSlidingWindow, step) == 8);
#endif
  /* The members are filled: additional_data of slices, extensions and windows, NULL
   * gradient_data, the FStore of a store node. */
  FGraphNode *a = KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
  CHECK(a->gradient_data == NULL);
  const FStore *store = (const FStore *)a->operation.additional_data;
  CHECK(store != NULL && store->mem_id == NULL && store->num_entries == 6);
  FGraphNode *s = fslice_step(a, (long[]){0, 2}, (long[]){2, 0}, (long[]){1, -2});
  const FSlice *slice = (const FSlice *)s->operation.additional_data;
  CHECK(s->operation.op_type == FSLICE && slice != NULL);
  CHECK(slice->start[1] == 2 && slice->end[1] == 0 && slice->step[1] == -2);
  CHECK_VALUES(s, 0, 3, 6);
  FGraphNode *e = fextend(a, (size_t[]){3, 4}, (size_t[]){1, 1});
  const FExtend *extend = (const FExtend *)e->operation.additional_data;
  CHECK(e->operation.op_type == FEXTEND && extend != NULL);
  CHECK(extend->start[0] == 1 && extend->start[1] == 1 && extend->step[1] == 1);
  FGraphNode *w = fsliding_window(a, (size_t[]){2, 2}, (unsigned int[]){1, 1});
  const FSlidingWindow *window = (const FSlidingWindow *)w->operation.additional_data;
  CHECK(w->operation.op_type == FSLIDING_WINDOW && window != NULL);
  CHECK(window->size[1] == 2 && window->step[0] == 1);
  FGraphNode *r = fCalculateResult(w);
  CHECK(r != NULL && r->result_data != NULL && r->result_data->num_entries == 8);
  fFreeGraph(s);
  fFreeGraph(e);
  fFreeGraph(w);
  /* Computed on the GPU backend, the result names its OpenCL buffer; without a device the call
   * fails with OCL_ERROR. */
  {
    FGraphNode *n = fadd_ci(KT_NODE(F_FLOAT32, KT_SHAPE(3), 1, 2, 3), 1);
    FGraphNode *on_gpu = fExecuteGraph_gpu(n);
    if (on_gpu != NULL) {
      CHECK(on_gpu->result_data != NULL && on_gpu->result_data->mem_id != NULL);
      CHECK_VALUES(on_gpu, 0, 2, 3, 4);
    } else {
      CHECK(fErrorType() == OCL_ERROR);
    }
    fFreeGraph(n);
  }
  /* A window cannot fit into an empty dimension (it would be larger than it). */
  FGraphNode *empty = fconstant_i(1, (size_t[]){0, 5}, 2);
  CHECK_ERROR(fsliding_window(empty, (size_t[]){1, 2}, (unsigned int[]){1, 1}) == NULL,
              INVALID_SELECT, "fsliding_window", "does not fit");
  fFreeGraph(empty);
}

void test_flint_idioms(void) {
  test_repeat_counts_extra_copies();
  test_gradient_types();
  test_ties();
  test_scalar_predecessors();
  test_layout();
}
