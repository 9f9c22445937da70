/* A tiny test framework for the C API tests: CHECK macros that report file:line and count
 * failures, and helpers to build nodes and compare their values. */
#ifndef KILN_C_TESTS_CHECK_H
#define KILN_C_TESTS_CHECK_H

#include <flint.h>
#include <stddef.h>
#include <stdio.h>

extern int kt_checks;
extern int kt_failures;

void kt_fail(const char *file, int line, const char *what);

#define CHECK(cond)                                       \
  do {                                                    \
    ++kt_checks;                                          \
    if (!(cond)) kt_fail(__FILE__, __LINE__, #cond);      \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                             \
  do {                                                                                    \
    const double kt_a_ = (double)(a), kt_b_ = (double)(b);                                \
    ++kt_checks;                                                                          \
    if (!(kt_a_ - kt_b_ <= (tol) && kt_b_ - kt_a_ <= (tol))) {                            \
      char kt_msg_[256];                                                                  \
      snprintf(kt_msg_, sizeof kt_msg_, "%s = %.17g, expected %s = %.17g", #a, kt_a_, #b, \
               kt_b_);                                                                    \
      kt_fail(__FILE__, __LINE__, kt_msg_);                                               \
    }                                                                                     \
  } while (0)

/* Executes `node` (if needed) and compares its values with the listed ones. */
#define CHECK_VALUES(node, tol, ...)                                                       \
  do {                                                                                     \
    const double kt_expected_[] = {__VA_ARGS__};                                           \
    kt_check_values(__FILE__, __LINE__, (node), kt_expected_,                              \
                    sizeof kt_expected_ / sizeof kt_expected_[0], (tol));                  \
  } while (0)

/* Compares the node's shape with the listed sizes. */
#define CHECK_SHAPE(node, ...)                                                             \
  do {                                                                                     \
    const size_t kt_shape_[] = {__VA_ARGS__};                                              \
    kt_check_shape(__FILE__, __LINE__, (node), kt_shape_,                                  \
                   (int)(sizeof kt_shape_ / sizeof kt_shape_[0]));                         \
  } while (0)

/* `result` must be NULL (or an error code) with fErrorType() == code and a message that
 * contains each of the given strings. */
#define CHECK_ERROR(failed, code, ...)                                                     \
  do {                                                                                     \
    const char *kt_parts_[] = {__VA_ARGS__};                                               \
    kt_check_error(__FILE__, __LINE__, (failed), (code), kt_parts_,                        \
                   sizeof kt_parts_ / sizeof kt_parts_[0]);                                \
  } while (0)

void kt_check_values(const char *file, int line, FGraphNode *node, const double *expected,
                     size_t n, double tol);
void kt_check_shape(const char *file, int line, FGraphNode *node, const size_t *shape, int dims);

/* Whether the GPU (OpenCL) backend initializes here. Checks of the GPU functions take the branch
 * that fits; main() says which one ran. */
int kt_have_gpu(void);
void kt_check_error(const char *file, int line, int failed, FErrorType code, const char **parts,
                    size_t n);

/* The i-th value of an executed node, as double. */
double kt_value(const FGraphNode *node, size_t i);

/* Nodes from literal data: kt_f32(shape, dims, values...) etc. */
FGraphNode *kt_node(enum FType type, const double *values, int n, const size_t *shape, int dims);
#define KT_NODE(type, shape_list, ...)                                                     \
  kt_node(type, (const double[]){__VA_ARGS__},                                             \
          (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)),                   \
          (const size_t[])shape_list,                                                      \
          (int)(sizeof((const size_t[])shape_list) / sizeof(size_t)))
#define KT_SHAPE(...) {__VA_ARGS__}

/* The test groups (one per file). */
void test_nodes(void);
void test_ops(void);
void test_execution(void);
void test_gradients(void);
void test_errors(void);
void test_logging(void);
void test_serialization(void);
void test_images(void);
void test_flint_idioms(void);

#endif
