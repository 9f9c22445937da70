/* The C API (flint.h) used from C: build a graph, execute it, read the results, compute
 * gradients and free everything. */
#include <flint.h>
#include <stdio.h>
#include <stdlib.h>

static void print_node(const char *name, FGraphNode *node) {
  const FOperation *op = &node->operation;
  printf("%s: shape [", name);
  for (int d = 0; d < op->dimensions; ++d) printf(d ? ",%zu" : "%zu", op->shape[d]);
  printf("] =");
  const FResultData *r = node->result_data;
  for (size_t i = 0; i < r->num_entries; ++i) {
    switch (op->data_type) {
      case F_INT32: printf(" %d", ((const int *)r->data)[i]); break;
      case F_INT64: printf(" %ld", ((const long *)r->data)[i]); break;
      case F_FLOAT32: printf(" %g", ((const float *)r->data)[i]); break;
      case F_FLOAT64: printf(" %g", ((const double *)r->data)[i]); break;
    }
  }
  printf("\n");
}

int main(void) {
  if (flintInit(FLINT_BACKEND_ONLY_CPU) != NO_ERROR) return 1;

  /* The document's broadcasting example: [2,3] + [3]. */
  float data_a[] = {0, 1, 2, 3, 4, 5};
  size_t shape_a[] = {2, 3};
  float data_b[] = {2, 4, 6};
  size_t shape_b = 3;
  FGraphNode *a = fCreateGraph(data_a, 6, F_FLOAT32, shape_a, 2);
  FGraphNode *b = fCreateGraph(data_b, 3, F_FLOAT32, &shape_b, 1);
  FGraphNode *c = fadd(a, b); /* nothing is computed yet */
  printf("reference counters: a %zu, b %zu, c %zu\n", a->reference_counter,
         b->reference_counter, c->reference_counter);
  c = fCalculateResult(c);
  print_node("a + b", c); /* {{2, 5, 8}, {5, 8, 11}} */

  /* A small chain with a matrix product and a reduction. */
  double w_data[] = {1, 0, 0, 1, 1, 1};
  size_t w_shape[] = {3, 2};
  FGraphNode *w = fCreateGraph(w_data, 6, F_FLOAT64, w_shape, 2);
  FGraphNode *y = fCalculateResult(freduce_sum(fmatmul(c, w), 1));
  print_node("sum(matmul(a + b, w), 1)", y); /* f64 [2] */

  /* Errors are return values: a wrong shape gives NULL and a message. */
  FGraphNode *bad = fmatmul(a, a);
  if (bad == NULL) printf("error %d: %s\n", (int)fErrorType(), fErrorMessage());

  /* Gradients: d/dx sum(x * x + 3x) = 2x + 3. */
  double x_data[] = {1, 2, 3};
  size_t x_shape = 3;
  fStartGradientContext();
  FGraphNode *x = fCreateGraph(x_data, 3, F_FLOAT64, &x_shape, 1);
  fMarkGradientVariable(x);
  FGraphNode *f = fadd(fmul(x, x), fmul(x, 3.0));
  fStopGradientContext();
  FGraphNode *dx = fCalculateResult(fCalculateGradient(f, x));
  print_node("d/dx sum(x*x + 3x)", dx); /* 5 7 9 */

  /* Serialization round trip. */
  size_t bytes = 0;
  char *serialized = fserialize(y, &bytes);
  size_t read = bytes;
  FGraphNode *copy = fCalculateResult(fdeserialize(serialized, &read));
  print_node("deserialized", copy);
  free(serialized);

  /* Freeing the results frees what they were built from. */
  fFreeGraph(y); /* frees w, c, and (through c) a and b */
  fFreeGraph(f); /* frees x */
  fFreeGraph(dx);
  fFreeGraph(copy);
  return flintCleanup() == NO_ERROR ? 0 : 1;
}
