/* Creating nodes, their fields, reference counting, fFreeGraph and fOptimizeMemory. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void test_create_graph(void) {
  float data[] = {0, 1, 2, 3, 4, 5};
  size_t shape[] = {2, 3};
  FGraphNode *a = fCreateGraph(data, 6, F_FLOAT32, shape, 2);
  CHECK(a != NULL);
  data[0] = 100; /* the node holds a copy */
  shape[0] = 7;
  CHECK_SHAPE(a, 2, 3);
  CHECK(a->operation.data_type == F_FLOAT32);
  CHECK(a->operation.op_type == FSTORE);
  CHECK(a->num_predecessor == 0);
  CHECK(a->reference_counter == 0);
  CHECK(a->result_data == NULL); /* not executed yet */
  {
    const FStore *store = (const FStore *)a->operation.additional_data;
    CHECK(store != NULL && store->num_entries == 6);
    CHECK(store != NULL && ((const float *)store->data)[1] == 1.0f);
  }
  CHECK_VALUES(a, 0, 0, 1, 2, 3, 4, 5);
  CHECK(a->result_data != NULL && a->result_data->num_entries == 6);
  fFreeGraph(a);

  {
    int ints[] = {1, -2, 3};
    long longs[] = {1L << 40, -5};
    double doubles[] = {0.5, -0.25};
    size_t three = 3, two = 2;
    FGraphNode *i = fCreateGraph(ints, 3, F_INT32, &three, 1);
    FGraphNode *l = fCreateGraph(longs, 2, F_INT64, &two, 1);
    FGraphNode *d = fCreateGraph(doubles, 2, F_FLOAT64, &two, 1);
    CHECK(i->operation.data_type == F_INT32);
    CHECK(l->operation.data_type == F_INT64);
    CHECK(d->operation.data_type == F_FLOAT64);
    CHECK_VALUES(i, 0, 1, -2, 3);
    CHECK_VALUES(l, 0, (double)(1L << 40), -5);
    CHECK_VALUES(d, 0, 0.5, -0.25);
    fFreeGraph(i);
    fFreeGraph(l);
    fFreeGraph(d);
  }
  {
    /* An empty node. */
    size_t empty[] = {0, 3};
    FGraphNode *e = fCreateGraph(NULL, 0, F_INT32, empty, 2);
    CHECK_SHAPE(e, 0, 3);
    CHECK(fCalculateResult(e) != NULL && e->result_data->num_entries == 0);
    fFreeGraph(e);
  }
}

static void test_constants(void) {
  size_t shape[] = {2, 2};
  FGraphNode *i = fconstant_i(7, shape, 2);
  FGraphNode *l = fconstant_l(1L << 35, shape, 2);
  FGraphNode *f = fconstant_f(1.5f, shape, 2);
  FGraphNode *d = fconstant_d(-2.25, shape, 2);
  CHECK(i->operation.data_type == F_INT32 && i->operation.op_type == FGEN_CONSTANT);
  CHECK(l->operation.data_type == F_INT64);
  CHECK(f->operation.data_type == F_FLOAT32);
  CHECK(d->operation.data_type == F_FLOAT64);
  CHECK_VALUES(i, 0, 7, 7, 7, 7);
  CHECK_VALUES(l, 0, 34359738368.0, 34359738368.0, 34359738368.0, 34359738368.0);
  CHECK_VALUES(f, 0, 1.5, 1.5, 1.5, 1.5);
  CHECK_VALUES(d, 0, -2.25, -2.25, -2.25, -2.25);
  fFreeGraph(i);
  fFreeGraph(l);
  fFreeGraph(f);
  fFreeGraph(d);

#ifndef FLINT_NO_GENERIC_MACROS
  {
    FGraphNode *g = fconstant(3.0f, shape, 2);
    CHECK(g->operation.data_type == F_FLOAT32);
    fFreeGraph(g);
  }
#endif
}

static void test_random_and_arange(void) {
  size_t shape[] = {10, 100};
  FGraphNode *r = frandom(shape, 2);
  CHECK(r->operation.data_type == F_FLOAT64);
  CHECK(r->operation.op_type == FGEN_RANDOM);
  CHECK(fCalculateResult(r) != NULL);
  {
    double lo = 1, hi = 0, sum = 0;
    for (size_t k = 0; k < 1000; ++k) {
      const double v = kt_value(r, k);
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
      sum += v;
    }
    CHECK(lo >= 0.0 && hi < 1.0);
    CHECK(sum / 1000 > 0.4 && sum / 1000 < 0.6);
  }
  {
    /* A second node has other values. */
    FGraphNode *r2 = fCalculateResult(frandom(shape, 2));
    int differ = 0;
    for (size_t k = 0; k < 1000; ++k) differ += kt_value(r, k) != kt_value(r2, k);
    CHECK(differ > 900);
    fFreeGraph(r2);
  }
  fFreeGraph(r);

  {
    size_t s[] = {2, 3};
    FGraphNode *a0 = farange(s, 2, 0);
    FGraphNode *a1 = farange(s, 2, 1);
    CHECK(a0->operation.data_type == F_INT64 && a0->operation.op_type == FGEN_ARANGE);
    CHECK_SHAPE(a1, 2, 3);
    CHECK_VALUES(a0, 0, 0, 0, 0, 1, 1, 1);
    CHECK_VALUES(a1, 0, 0, 1, 2, 0, 1, 2);
    fFreeGraph(a0);
    fFreeGraph(a1);
  }
}

static void test_reference_counting(void) {
  size_t shape[] = {2};
  FGraphNode *gn1 = KT_NODE(F_FLOAT32, KT_SHAPE(2), 1, 2);
  FGraphNode *gn2 = KT_NODE(F_FLOAT32, KT_SHAPE(2), 3, 4);
  CHECK(gn1->reference_counter == 0 && gn2->reference_counter == 0);
  FGraphNode *gn3 = fadd_g(gn1, gn2);
  CHECK(gn3->reference_counter == 0);
  CHECK(gn1->reference_counter == 1 && gn2->reference_counter == 1);
  CHECK(gn3->num_predecessor == 2);
  CHECK(gn3->predecessors[0] == gn1 && gn3->predecessors[1] == gn2);
  CHECK(gn3->operation.op_type == FADD);

  /* Using a node twice counts twice. */
  FGraphNode *gn4 = fmul_g(gn1, gn1);
  CHECK(gn1->reference_counter == 3);
  /* A scalar operand is a constant node, made with the node (decision 20). */
  FGraphNode *gn5 = fadd_ci(gn2, 1);
  CHECK(gn5->num_predecessor == 2 && gn5->predecessors[0] == gn2);
  CHECK(gn5->predecessors[1]->operation.op_type == FGEN_CONSTANT);
  CHECK(gn2->reference_counter == 2);

  /* A node still in use is not freed. */
  fFreeGraph(gn1);
  CHECK(gn1->reference_counter == 3);
  CHECK_VALUES(gn1, 0, 1, 2);

  /* Freeing gn4 releases its two uses of gn1 (gn1 stays: gn3 uses it). */
  fFreeGraph(gn4);
  CHECK(gn1->reference_counter == 1);
  fFreeGraph(gn5);
  CHECK(gn2->reference_counter == 1);
  CHECK_VALUES(gn3, 0, 4, 6);
  /* Freeing the result frees everything it was built from. */
  fFreeGraph(gn3);
  /* The nodes are gone: using them is a clean error, not a crash. */
  fFreeGraph(gn1);
  CHECK_ERROR(1, INVALID_SELECT, "fFreeGraph", "not a live node");
  CHECK_ERROR(fneg(gn2) == NULL, INVALID_SELECT, "fneg", "not a live node");

  /* Shared subgraphs: a diamond. */
  {
    FGraphNode *x = fconstant_d(2.0, shape, 1);
    FGraphNode *y = fsin(x);
    FGraphNode *z = fcos(x);
    FGraphNode *w = fadd_g(y, z);
    CHECK(x->reference_counter == 2);
    CHECK(y->reference_counter == 1 && z->reference_counter == 1);
    fFreeGraph(w); /* frees y, z and x */
  }

  /* A deep chain is freed without recursion. */
  {
    FGraphNode *node = fconstant_i(0, shape, 1);
    for (int k = 0; k < 100000; ++k) node = fadd_ci(node, 1);
    CHECK(node != NULL);
    CHECK(node->reference_counter == 0);
    CHECK(node->predecessors[0]->reference_counter == 1);
    fFreeGraph(node);
  }
  /* And a moderately deep one executes. */
  {
    FGraphNode *node = fconstant_i(0, shape, 1);
    for (int k = 0; k < 2000; ++k) node = fadd_ci(node, 1);
    CHECK_VALUES(node, 0, 2000, 2000);
    fFreeGraph(node);
  }
}

static void test_optimize_memory(void) {
  FGraphNode *a = KT_NODE(F_FLOAT64, KT_SHAPE(3), 1, 2, 3);
  FGraphNode *b = KT_NODE(F_FLOAT64, KT_SHAPE(3), 10, 20, 30);
  FGraphNode *c = fadd_g(a, b);
  /* Not executed yet: nothing happens. */
  CHECK(fOptimizeMemory(c) == c);
  CHECK(c->num_predecessor == 2 && c->operation.op_type == FADD);
  CHECK(a->reference_counter == 1 && b->reference_counter == 1);

  CHECK(fExecuteGraph(c) == c);
  b->reference_counter++; /* keep b */
  CHECK(fOptimizeMemory(c) == c);
  CHECK(c->num_predecessor == 0);
  CHECK(c->operation.op_type == FSTORE);
  CHECK(c->operation.additional_data != NULL);
  CHECK(b->reference_counter == 1); /* a was freed, b kept */
  CHECK_VALUES(c, 0, 11, 22, 33);
  CHECK_VALUES(b, 0, 10, 20, 30);
  {
    /* The optimized node still works as an operand. */
    FGraphNode *d = fmul_ci(c, 2);
    CHECK_VALUES(d, 0, 22, 44, 66);
    fFreeGraph(d); /* frees c */
  }
  b->reference_counter--;
  fFreeGraph(b);

  /* Nodes of a gradient context keep their graph. */
  {
    FGraphNode *x = KT_NODE(F_FLOAT64, KT_SHAPE(2), 1, 2);
    fStartGradientContext();
    fMarkGradientVariable(x);
    FGraphNode *y = fCalculateResult(fmul_g(x, x));
    fStopGradientContext();
    CHECK(fOptimizeMemory(y) == y);
    CHECK(y->num_predecessor == 2 && x->reference_counter == 2);
    FGraphNode *g = fCalculateGradient(y, x);
    CHECK_VALUES(g, 0, 2, 4);
    fFreeGraph(g);
    fFreeGraph(y);
  }
}

static void test_inverse_broadcasting_marks(void) {
  /* [3,3] * [3]: normal broadcasting multiplies each row by b, inverse each column. */
  FGraphNode *a = KT_NODE(F_INT32, KT_SHAPE(3, 3), 1, 1, 1, 1, 1, 1, 1, 1, 1);
  FGraphNode *b = KT_NODE(F_INT32, KT_SHAPE(3), 1, 2, 3);
  FGraphNode *normal = fmul_g(a, b);
  CHECK_VALUES(normal, 0, 1, 2, 3, 1, 2, 3, 1, 2, 3);
  fEnforceInverseBroadcasting(b);
  CHECK(b->operation.broadcasting_mode == 1);
  FGraphNode *inverse = fmul_g(a, b);
  CHECK_VALUES(inverse, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3);
  /* The mark is not passed to results. */
  CHECK(inverse->operation.broadcasting_mode == 0);
  {
    /* A result computed from the marked node broadcasts normally again. */
    FGraphNode *copy = fadd_ci(b, 0);
    CHECK(copy->operation.broadcasting_mode == 0);
    FGraphNode *again = fmul_g(a, copy);
    CHECK_VALUES(again, 0, 1, 2, 3, 1, 2, 3, 1, 2, 3);
    fFreeGraph(again);
  }
  fUnenforceInverseBroadcasting(b);
  CHECK(b->operation.broadcasting_mode == 0);
  FGraphNode *back = fmul_g(a, b);
  CHECK_VALUES(back, 0, 1, 2, 3, 1, 2, 3, 1, 2, 3);
  /* Where only normal broadcasting fits, an enforced operand fails. */
  {
    FGraphNode *row = KT_NODE(F_INT32, KT_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    FGraphNode *col = KT_NODE(F_INT32, KT_SHAPE(3), 1, 1, 1);
    fEnforceInverseBroadcasting(col);
    CHECK_ERROR(fadd_g(row, col) == NULL, INCOMPATIBLE_SHAPES, "fadd_g", "[2,3]", "[3]");
    fUnenforceInverseBroadcasting(col);
    FGraphNode *ok = fadd_g(row, col);
    CHECK_VALUES(ok, 0, 2, 3, 4, 5, 6, 7);
    fFreeGraph(ok);
  }
  fFreeGraph(normal);
  fFreeGraph(inverse);
  fFreeGraph(back);
}

void test_nodes(void) {
  test_create_graph();
  test_constants();
  test_random_and_arange();
  test_reference_counting();
  test_optimize_memory();
  test_inverse_broadcasting_marks();
}
