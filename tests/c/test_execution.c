/* Backends, execution functions, fSyncMemory and eager execution. */
#include <string.h>

#include "check.h"

static void test_backends(void) {
  CHECK(flintCleanup() == NO_ERROR);
  CHECK(flintInitializedBackends() == 0);
  CHECK(flintInit(FLINT_BACKEND_ONLY_CPU) == NO_ERROR);
  CHECK(flintInitializedBackends() == FLINT_BACKEND_ONLY_CPU);
  CHECK(flintCleanup_gpu() == NO_ERROR);
  CHECK(flintInitializedBackends() == FLINT_BACKEND_ONLY_CPU);
  CHECK(flintCleanup_cpu() == NO_ERROR);
  CHECK(flintInitializedBackends() == 0);
  CHECK(flintInit_cpu() == NO_ERROR);
  CHECK(flintInitializedBackends() == FLINT_BACKEND_ONLY_CPU);

  if (kt_have_gpu()) {
    CHECK(flintInit(FLINT_BACKEND_ONLY_GPU) == NO_ERROR);
    CHECK(flintInitializedBackends() == FLINT_BACKEND_BOTH);
    CHECK(flintCleanup_gpu() == NO_ERROR);
    CHECK(flintInitializedBackends() == FLINT_BACKEND_ONLY_CPU);
    CHECK(flintInit_gpu() == NO_ERROR);
    CHECK(flintInitializedBackends() == FLINT_BACKEND_BOTH);
    CHECK(flintCleanup_gpu() == NO_ERROR);
  } else {
    /* No GPU backend: asking for it alone is a clean OCL_ERROR. */
    CHECK_ERROR(flintInit(FLINT_BACKEND_ONLY_GPU) == OCL_ERROR, OCL_ERROR, "flintInit", "OpenCL");
    CHECK_ERROR(flintInit_gpu() == OCL_ERROR, OCL_ERROR, "flintInit_gpu", "OpenCL");
  }
  CHECK(flintInitializedBackends() == FLINT_BACKEND_ONLY_CPU);
  /* Both: the CPU backend, and the GPU backend where there is one. */
  CHECK(flintInit(FLINT_BACKEND_BOTH) == NO_ERROR);
  CHECK(flintInitializedBackends() ==
        (kt_have_gpu() ? FLINT_BACKEND_BOTH : FLINT_BACKEND_ONLY_CPU));
  CHECK(flintCleanup_gpu() == NO_ERROR);
  CHECK_ERROR(flintInit(7) == INVALID_SELECT, INVALID_SELECT, "flintInit", "7");

  /* Execution initializes the CPU backend when needed. */
  CHECK(flintCleanup() == NO_ERROR);
  {
    size_t shape[] = {2};
    FGraphNode *c = fconstant_i(1, shape, 1);
    CHECK(fExecuteGraph(c) == c);
    CHECK(flintInitializedBackends() == FLINT_BACKEND_ONLY_CPU);
    fFreeGraph(c);
  }
}

static void test_execute_functions(void) {
  FGraphNode *a = KT_NODE(F_FLOAT64, KT_SHAPE(2, 2), 1, 2, 3, 4);
  FGraphNode *b = fmul_cd(a, 2.0);
  FGraphNode *c = fadd_ci(b, 1);
  CHECK(b->result_data == NULL && c->result_data == NULL);
  CHECK(fSyncMemory(c) == NULL); /* never executes */
  CHECK(c->result_data == NULL);

  CHECK(fExecuteGraph_cpu(c) == c);
  CHECK(c->result_data != NULL);
  CHECK(fSyncMemory(c) == c->result_data);
  CHECK(c->result_data->num_entries == 4);
  {
    const double *v = (const double *)c->result_data->data;
    CHECK(v[0] == 3 && v[1] == 5 && v[2] == 7 && v[3] == 9);
  }
  /* Executing again is fine and keeps the values. */
  CHECK(fExecuteGraph(c) == c);
  CHECK_VALUES(c, 0, 3, 5, 7, 9);
  /* Executing a predecessor. */
  CHECK(fExecuteGraph_cpu_eagerly(b) == b);
  CHECK_VALUES(b, 0, 2, 4, 6, 8);
  CHECK(fCalculateResult(a) == a && a->result_data != NULL);

  if (kt_have_gpu()) {
    /* On the GPU: the same values, read back by fSyncMemory. */
    FGraphNode *d = fsub_ci(fmul_cd(a, 3.0), 2);
    FGraphNode *e = freduce_sum(fmul_ci(a, 2), 0);
    CHECK(fExecuteGraph_gpu(d) == d);
    CHECK(fSyncMemory(d) == d->result_data);
    CHECK_VALUES(d, 0, 1, 4, 7, 10);
    CHECK(fExecuteGraph_gpu_eagerly(e) == e);
    CHECK_VALUES(e, 0, 8, 12);
    /* With the GPU as the only backend, fExecuteGraph runs there. */
    CHECK(flintCleanup() == NO_ERROR);
    CHECK(flintInit(FLINT_BACKEND_ONLY_GPU) == NO_ERROR);
    {
      FGraphNode *f = fadd_cd(fsqrt_g(fabs_g(d)), 0.5);
      CHECK(fExecuteGraph(f) == f);
      CHECK_VALUES(f, 1e-12, 1.5, 2.5, 3.1457513110645907, 3.6622776601683795);
      fFreeGraph(f);
    }
    CHECK(flintCleanup() == NO_ERROR);
    fFreeGraph(e);
  } else {
    /* The GPU functions fail cleanly. */
    CHECK_ERROR(fExecuteGraph_gpu(c) == NULL, OCL_ERROR, "fExecuteGraph_gpu", "OpenCL");
    CHECK_ERROR(fExecuteGraph_gpu_eagerly(c) == NULL, OCL_ERROR, "fExecuteGraph_gpu_eagerly");
  }
  CHECK_VALUES(c, 0, 3, 5, 7, 9);
  fFreeGraph(c);
}

static void test_eager(void) {
  CHECK(fIsEagerExecution() == 0);
  fEnableEagerExecution();
  CHECK(fIsEagerExecution() == 1);
  {
    FGraphNode *a = KT_NODE(F_INT32, KT_SHAPE(3), 1, 2, 3);
    CHECK(a->result_data != NULL);
    FGraphNode *b = fmul_ci(a, 3);
    CHECK(b->result_data != NULL && b->result_data->num_entries == 3);
    CHECK(((const int *)b->result_data->data)[2] == 9);
    FGraphNode *s = freduce_sum(b, 0);
    CHECK(s->result_data != NULL && ((const int *)s->result_data->data)[0] == 18);
    /* Errors at run time surface when the node is built. */
    size_t huge[] = {(size_t)1 << 20, (size_t)1 << 20, (size_t)1 << 12};
    CHECK_ERROR(fconstant_d(1.0, huge, 3) == NULL, OUT_OF_MEMORY, "fconstant_d");
    fFreeGraph(s);
  }
  fDisableEagerExecution();
  CHECK(fIsEagerExecution() == 0);
  {
    FGraphNode *a = KT_NODE(F_INT32, KT_SHAPE(3), 1, 2, 3);
    FGraphNode *b = fmul_ci(a, 3);
    CHECK(b->result_data == NULL);
    fFreeGraph(b);
  }
}

void test_execution(void) {
  test_backends();
  test_execute_functions();
  test_eager();
}
