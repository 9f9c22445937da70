/* Gradient contexts, marking variables, fCalculateGradient(s). */
#include "check.h"

static void test_single_gradient(void) {
  CHECK(!fIsGradientContext());
  fStartGradientContext();
  CHECK(fIsGradientContext());
  FGraphNode *x = KT_NODE(F_FLOAT64, KT_SHAPE(3), 1, 2, 3);
  fMarkGradientVariable(x);
  /* f = sum(x*x + 3x) -> 2x + 3 */
  FGraphNode *f = fadd_g(fmul_g(x, x), fmul_cd(x, 3.0));
  fStopGradientContext();
  CHECK(!fIsGradientContext());
  FGraphNode *g = fCalculateGradient(f, x);
  CHECK(g != NULL);
  CHECK(g->num_predecessor == 0 && g->reference_counter == 0);
  CHECK(g->operation.data_type == F_FLOAT64);
  CHECK_SHAPE(g, 3);
  CHECK_VALUES(g, 1e-12, 5, 7, 9);
  fFreeGraph(g);
  fFreeGraph(f);
}

static void test_types_and_reductions(void) {
  fStartGradientContext();
  FGraphNode *w = KT_NODE(F_FLOAT32, KT_SHAPE(2, 2), 1, 2, 3, 4);
  FGraphNode *v = KT_NODE(F_FLOAT32, KT_SHAPE(2, 1), 1, -1);
  fMarkGradientVariable(w);
  fMarkGradientVariable(v);
  /* y = sum over rows of (w @ v): dy/dw[i][j] = v[j], dy/dv[j] = sum_i w[i][j]. */
  FGraphNode *y = freduce_sum(freduce_sum(fmatmul(w, v), 0), 0);
  fStopGradientContext();
  CHECK_SHAPE(y, 1);
  CHECK_VALUES(y, 0, -2);
  {
    FGraphNode *vars[2] = {w, v};
    FGraphNode *grads[2] = {NULL, NULL};
    CHECK(fCalculateGradients(y, vars, 2, grads) == NO_ERROR);
    CHECK(grads[0] != NULL && grads[1] != NULL);
    CHECK(grads[0]->operation.data_type == F_FLOAT32);
    CHECK_SHAPE(grads[0], 2, 2);
    CHECK_VALUES(grads[0], 1e-6, 1, -1, 1, -1);
    CHECK_SHAPE(grads[1], 2, 1);
    CHECK_VALUES(grads[1], 1e-6, 4, 6);
    fFreeGraph(grads[0]);
    fFreeGraph(grads[1]);
  }
  /* An f32 output and an f64 variable give an f64 gradient; an unrelated variable gets 0. */
  {
    FGraphNode *u = KT_NODE(F_FLOAT64, KT_SHAPE(2), 5, 6);
    fMarkGradientVariable(u);
    FGraphNode *g = fCalculateGradient(y, u);
    CHECK(g != NULL && g->operation.data_type == F_FLOAT64);
    CHECK_VALUES(g, 0, 0, 0);
    fFreeGraph(g);
    fUnmarkGradientVariable(u);
    CHECK_ERROR(fCalculateGradient(y, u) == NULL, ILLEGAL_DERIVE, "fCalculateGradient");
    fFreeGraph(u);
  }
  /* Unmarked variables cannot be derived for. */
  fUnmarkGradientVariable(w);
  {
    FGraphNode *vars[2] = {v, w};
    FGraphNode *grads[2] = {NULL, NULL};
    CHECK_ERROR(fCalculateGradients(y, vars, 2, grads) == ILLEGAL_DERIVE, ILLEGAL_DERIVE,
                "fCalculateGradients", "not watched");
    CHECK(grads[0] == NULL && grads[1] == NULL);
    CHECK_ERROR(fCalculateGradients(y, vars, 2, NULL) == INVALID_SELECT, INVALID_SELECT,
                "gradients is NULL");
    CHECK(fCalculateGradients(y, vars, 0, grads) == NO_ERROR);
  }
  fFreeGraph(y);
}

static void test_outside_context(void) {
  FGraphNode *x = KT_NODE(F_FLOAT64, KT_SHAPE(2), 1, 2);
  fMarkGradientVariable(x);
  FGraphNode *y = fmul_g(x, x); /* built outside a gradient context */
  CHECK_ERROR(fCalculateGradient(y, x) == NULL, ILLEGAL_DERIVE, "fCalculateGradient",
              "gradient context");
  fFreeGraph(y);
}

static void test_gradient_of_ops(void) {
  fStartGradientContext();
  FGraphNode *x = KT_NODE(F_FLOAT64, KT_SHAPE(2, 2), 0.5, 1, 2, 4);
  fMarkGradientVariable(x);
  /* sum(log(x) + sin(x) + x / 2) -> 1/x + cos(x) + 1/2 */
  FGraphNode *f = fadd_g(fadd_g(flog(x), fsin(x)), fdiv_cd(x, 2.0));
  FGraphNode *h = freduce_max(fflatten(x), 0); /* max picks x[3] */
  fStopGradientContext();
  FGraphNode *g = fCalculateGradient(f, x);
  CHECK_VALUES(g, 1e-12, 1 / 0.5 + 0.8775825618903728 + 0.5, 1 + 0.5403023058681398 + 0.5,
               0.5 + -0.4161468365471424 + 0.5, 0.25 + -0.6536436208636119 + 0.5);
  FGraphNode *gh = fCalculateGradient(h, x);
  CHECK_VALUES(gh, 0, 0, 0, 0, 1);
  fFreeGraph(g);
  fFreeGraph(gh);
  fFreeGraph(f);
  fFreeGraph(h);
}

void test_gradients(void) {
  test_single_gradient();
  test_types_and_reductions();
  test_outside_context();
  test_gradient_of_ops();
}
