/* The C API test suite: runs every group and exits nonzero if a check failed. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

int kt_checks = 0;
int kt_failures = 0;

/* Under AddressSanitizer: huge allocations fail (as OUT_OF_MEMORY) instead of aborting. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:detect_leaks=1";
}


void kt_fail(const char *file, int line, const char *what) {
  ++kt_failures;
  fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
}

double kt_value(const FGraphNode *node, size_t i) {
  const void *data = node->result_data->data;
  switch (node->operation.data_type) {
    case F_INT32: return ((const int *)data)[i];
    case F_INT64: return (double)((const long *)data)[i];
    case F_FLOAT32: return ((const float *)data)[i];
    case F_FLOAT64: return ((const double *)data)[i];
  }
  return 0;
}

void kt_check_values(const char *file, int line, FGraphNode *node, const double *expected,
                     size_t n, double tol) {
  char msg[512];
  ++kt_checks;
  if (node == NULL) {
    snprintf(msg, sizeof msg, "node is NULL (error %d: %s)", (int)fErrorType(), fErrorMessage());
    kt_fail(file, line, msg);
    return;
  }
  if (fCalculateResult(node) == NULL || node->result_data == NULL) {
    snprintf(msg, sizeof msg, "execution failed (error %d: %s)", (int)fErrorType(),
             fErrorMessage());
    kt_fail(file, line, msg);
    return;
  }
  if (node->result_data->num_entries != n) {
    snprintf(msg, sizeof msg, "%zu entries, expected %zu", node->result_data->num_entries, n);
    kt_fail(file, line, msg);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const double v = kt_value(node, i);
    if (!(v - expected[i] <= tol && expected[i] - v <= tol)) {
      snprintf(msg, sizeof msg, "value %zu is %.17g, expected %.17g", i, v, expected[i]);
      kt_fail(file, line, msg);
      return;
    }
  }
}

void kt_check_shape(const char *file, int line, FGraphNode *node, const size_t *shape, int dims) {
  char msg[256];
  ++kt_checks;
  if (node == NULL) {
    snprintf(msg, sizeof msg, "node is NULL (error %d: %s)", (int)fErrorType(), fErrorMessage());
    kt_fail(file, line, msg);
    return;
  }
  int same = node->operation.dimensions == dims;
  for (int d = 0; same && d < dims; ++d) same = node->operation.shape[d] == shape[d];
  if (!same) {
    int k = snprintf(msg, sizeof msg, "shape is [");
    for (int d = 0; d < node->operation.dimensions && k < 200; ++d)
      k += snprintf(msg + k, sizeof msg - (size_t)k, d ? ",%zu" : "%zu", node->operation.shape[d]);
    snprintf(msg + k, sizeof msg - (size_t)k, "], expected %d dimensions", dims);
    kt_fail(file, line, msg);
  }
}

void kt_check_error(const char *file, int line, int failed, FErrorType code, const char **parts,
                    size_t n) {
  char msg[768];
  ++kt_checks;
  if (!failed) {
    kt_fail(file, line, "the call did not fail");
    return;
  }
  if (fErrorType() != code) {
    snprintf(msg, sizeof msg, "error type %d, expected %d (message: %s)", (int)fErrorType(),
             (int)code, fErrorMessage());
    kt_fail(file, line, msg);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    if (strstr(fErrorMessage(), parts[i]) == NULL) {
      snprintf(msg, sizeof msg, "message \"%s\" does not contain \"%s\"", fErrorMessage(),
               parts[i]);
      kt_fail(file, line, msg);
      return;
    }
  }
}

FGraphNode *kt_node(enum FType type, const double *values, int n, const size_t *shape, int dims) {
  void *data = malloc((size_t)(n > 0 ? n : 1) * 8);
  for (int i = 0; i < n; ++i) {
    switch (type) {
      case F_INT32: ((int *)data)[i] = (int)values[i]; break;
      case F_INT64: ((long *)data)[i] = (long)values[i]; break;
      case F_FLOAT32: ((float *)data)[i] = (float)values[i]; break;
      case F_FLOAT64: ((double *)data)[i] = values[i]; break;
    }
  }
  FGraphNode *node = fCreateGraph(data, n, type, shape, dims);
  free(data);
  return node;
}

/* Hostile arguments to every function (test_hostile.c). */
void test_hostile(void);

int kt_have_gpu(void) {
  static int known = -1;
  if (known < 0) {
    known = flintInit_gpu() == NO_ERROR;
    flintCleanup();
  }
  return known;
}

int main(void) {
  /* Before anything else: no error yet. */
  CHECK(fErrorType() == NO_ERROR);
  CHECK(strcmp(fErrorMessage(), "") == 0);
  printf("GPU (OpenCL) backend: %s\n",
         kt_have_gpu() ? "present, its functions are checked against the CPU"
                       : "absent, its functions are checked to fail with OCL_ERROR");
  /* Errors are tested on purpose below; keep stderr quiet (test_logging turns logging on). */
  fSetLoggingLevel(F_NO_LOGGING);

  {
    /* KILN_C_TESTS_VERBOSE=1 names each group as it starts (to find where a run stopped). */
    const char *verbose = getenv("KILN_C_TESTS_VERBOSE");
    static const struct {
      const char *name;
      void (*run)(void);
    } groups[] = {{"nodes", test_nodes},           {"ops", test_ops},
                  {"execution", test_execution},   {"gradients", test_gradients},
                  {"errors", test_errors},         {"logging", test_logging},
                  {"serialization", test_serialization}, {"images", test_images},
                  {"flint_idioms", test_flint_idioms},   {"hostile", test_hostile}};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; ++i) {
      if (verbose != NULL && strcmp(verbose, "1") == 0) {
        printf("[group %s: %d checks so far]\n", groups[i].name, kt_checks);
        fflush(stdout);
      }
      groups[i].run();
    }
  }

  flintCleanup();
  printf("%d passed, %d failed\n", kt_checks - kt_failures, kt_failures);
  return kt_failures == 0 ? 0 : 1;
}
