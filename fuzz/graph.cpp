// Structure-aware fuzzing of the C API (flint.h): the input is a program of calls that builds
// random graphs. Each step picks an operation from a table covering the functions of flint.h
// that build nodes, its operands (earlier results, or NULL) and its arguments: sizes, axes,
// windows, steps, permutations, scalars and types, mostly small and valid but often hostile (0,
// negative, near 2^31, 2^32, 2^63 and 2^64, axes out of range, non-permutations, NULL arrays).
//
// What must hold: every call returns a node or NULL with an error set (never INTERNAL_ERROR);
// every node's shape has an element count that fits in int64; every node small enough to be
// computed here executes, and its result has as many entries as its shape says and can be read;
// reference counters agree with the operands handed out; everything is freed at the end (the
// leak checker runs after each input).
//
// Nodes created from fuzz bytes are small; the hostile sizes go to the shape arguments, where
// kiln must reject them (or describe a huge result lazily, which is then never executed here).
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "flint.h"
#include "fuzz_common.hpp"
#include "kiln/error.hpp"
#include "kiln/kiln.hpp"

namespace {

using kiln_fuzz::Bytes;

// A node with more elements than this (or computed from one) is only built, never executed.
constexpr std::uint64_t kEvalLimit = 1 << 14;
constexpr std::size_t kMaxNodes = 48;
constexpr std::size_t kMaxSteps = 64;
// Argument arrays are this long, so an op may read one entry per dimension of any operand.
constexpr int kArray = 80;
constexpr int kMaxRank = 64;

// KILN_FUZZ_TRACE=1 prints each call's outcome (to read what a saved input does).
const bool trace = std::getenv("KILN_FUZZ_TRACE") != nullptr;

void print_node(const char* op, const FGraphNode* r) {
  std::fprintf(stderr, "%s -> ", op);
  if (r == nullptr) {
    std::fprintf(stderr, "NULL (%d: %s)\n", static_cast<int>(fErrorType()), fErrorMessage());
    return;
  }
  std::fprintf(stderr, "type %d [", static_cast<int>(r->operation.data_type));
  for (int d = 0; d < r->operation.dimensions; ++d)
    std::fprintf(stderr, d ? ",%zu" : "%zu", r->operation.shape[d]);
  std::fprintf(stderr, "]\n");
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "kiln graph fuzzer: %s (last error %d: %s)\n", what,
               static_cast<int>(fErrorType()), fErrorMessage());
  std::abort();
}

// ---- argument values -------------------------------------------------------------------------

std::uint64_t size_value(Bytes& in) {
  static constexpr std::uint64_t hostile[] = {
      0, 1, 2, 7, 16, 1ull << 31, 1ull << 32, (1ull << 32) - 1, 3037000500ull, 1ull << 40,
      1ull << 62, INT64_MAX - 1, INT64_MAX, 1ull << 63, UINT64_MAX - 1, UINT64_MAX};
  const std::uint8_t b = in.u8();
  if (b < 200) return b % 5;
  return hostile[b % (sizeof hostile / sizeof hostile[0])];
}

long long_value(Bytes& in) {
  static constexpr long hostile[] = {0,        1,        -1,       2,        -2,
                                     LONG_MAX, LONG_MIN, LONG_MAX - 1, LONG_MIN + 1,
                                     1L << 40, -(1L << 40), INT_MAX, INT_MIN, 5, -5};
  const std::uint8_t b = in.u8();
  if (b < 180) return static_cast<long>(b % 7) - 3;
  return hostile[b % (sizeof hostile / sizeof hostile[0])];
}

int int_value(Bytes& in) {
  static constexpr int hostile[] = {INT_MAX, INT_MIN, INT_MAX - 1, INT_MIN + 1, 100, -100, 64,
                                    -64, 32, 33, 1 << 16};
  const std::uint8_t b = in.u8();
  if (b < 210) return static_cast<int>(b % 8) - 3;
  return hostile[b % (sizeof hostile / sizeof hostile[0])];
}

unsigned unsigned_value(Bytes& in) {
  static constexpr unsigned hostile[] = {0, UINT_MAX, UINT_MAX - 1, 1u << 31, 1u << 16, 33, 64};
  const std::uint8_t b = in.u8();
  if (b < 200) return b % 5;
  return hostile[b % (sizeof hostile / sizeof hostile[0])];
}

std::int64_t i64_value(Bytes& in) {
  static constexpr std::int64_t hostile[] = {
      0,         -1,        INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MAX / 2, INT64_MIN / 2,
      1LL << 32, 1LL << 62, -(1LL << 62), 3037000500LL, INT32_MAX, INT32_MIN};
  const std::uint8_t b = in.u8();
  if (b < 190) return b % 5;
  return hostile[b % (sizeof hostile / sizeof hostile[0])];
}

double double_value(Bytes& in) {
  static constexpr double special[] = {0.0,
                                       -0.0,
                                       1e308,
                                       -1e308,
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(),
                                       std::numeric_limits<double>::quiet_NaN(),
                                       std::numeric_limits<double>::denorm_min(),
                                       2147483648.0,
                                       -9.3e18,
                                       0.5};
  const std::uint8_t b = in.u8();
  if (b < 200) return static_cast<double>(b % 11) - 4.0;
  return special[b % (sizeof special / sizeof special[0])];
}

// Rank arguments (fCreateGraph, fconstant, freshape, ...): mostly 1-4, sometimes hostile. Never
// above kArray: the callee reads that many entries of the shape array.
int rank_value(Bytes& in) {
  const std::uint8_t b = in.u8();
  if (b < 220) return 1 + b % 4;
  static constexpr int hostile[] = {0, -1, INT_MIN, 5, 8, 32, 33, kMaxRank};
  return hostile[b % (sizeof hostile / sizeof hostile[0])];
}

// ---- the program's nodes ---------------------------------------------------------------------

struct Entry {
  FGraphNode* node = nullptr;
  std::vector<int> preds;  // operands handed to the call that built it, in order
  std::size_t users = 0;   // entries that name it among their operands and are not freed
  bool big = false;        // itself or an ancestor too large to execute here
  bool freed = false;
};

class Program {
 public:
  explicit Program(Bytes& in) : in_(in) {}
  ~Program() { finish(); }

  void run() {
    for (std::size_t step = 0; step < kMaxSteps && !in_.empty() && nodes_.size() < kMaxNodes;
         ++step)
      one_call();
  }

 private:
  Bytes& in_;
  std::vector<Entry> nodes_;
  int contexts_ = 0;

  // ---- operands and arrays ----

  // An operand: the index of an earlier live node, or -1 for NULL.
  int pick_index() {
    const std::uint8_t b = in_.u8();
    if (nodes_.empty() || b == 255) return -1;
    // Recent nodes are likelier, so that chains of operations grow.
    int i = static_cast<int>(nodes_.size()) - 1 - static_cast<int>(b % nodes_.size());
    if (b & 0x80) i = static_cast<int>(nodes_.size()) - 1 - static_cast<int>(b % 3 % nodes_.size());
    if (i < 0) i = 0;
    // A freed node (freed through fOptimizeMemory) is not used again: only NULL is.
    while (i >= 0 && nodes_[i].freed) --i;
    return i;
  }
  FGraphNode* node_at(int i) const { return i < 0 ? nullptr : nodes_[i].node; }
  int rank_of(int i) const { return i < 0 ? 1 : nodes_[i].node->operation.dimensions; }
  std::uint64_t dim_of(int i, int d) const {
    if (i < 0 || d < 0 || d >= nodes_[i].node->operation.dimensions) return 1;
    return nodes_[i].node->operation.shape[d];
  }

  // Whether to hand over NULL instead of an array (an INVALID_SELECT when the op reads it).
  bool null_array() { return in_.u8() == 0xFF; }

  // `n` entries: a value from `gen` each, or (per array) the operand's own sizes / a small
  // uniform value, which keeps many calls valid enough to go deeper.
  template <class T, class Gen> T* fill(T (&a)[kArray], int n, int like, Gen gen) {
    if (null_array()) return nullptr;
    const std::uint8_t mode = in_.u8() % 4;
    for (int k = 0; k < kArray; ++k) a[k] = static_cast<T>(1);
    for (int k = 0; k < n && k < kArray; ++k) {
      switch (mode) {
        case 0: a[k] = static_cast<T>(dim_of(like, k)); break;  // the operand's shape
        case 1: a[k] = static_cast<T>(1 + (k == 0 ? in_.u8() % 3 : 0)); break;
        default: a[k] = gen(); break;
      }
    }
    return a;
  }

  // ---- results and errors ----

  // Calls the op; the sentinel tells a fresh error from a stale one (no op reports OCL_ERROR).
  static void arm() { flintInit_gpu(); }
  static void check_error(const char* op) {
    const FErrorType e = fErrorType();
    if (e == NO_ERROR || e == OCL_ERROR) {
      std::fprintf(stderr, "%s: ", op);
      fail("returned NULL without setting an error");
    }
    if (e == INTERNAL_ERROR) {
      std::fprintf(stderr, "%s: ", op);
      fail("INTERNAL_ERROR");
    }
  }

  // Elements of the node's shape; aborts if that count does not fit in int64.
  static std::uint64_t numel_of(const FGraphNode* n) {
    const FOperation& op = n->operation;
    if (op.dimensions < 1 || op.shape == nullptr) fail("a node without dimensions");
    std::uint64_t count = 1;
    bool zero = false;
    std::uint64_t nonzero = 1;
    for (int d = 0; d < op.dimensions; ++d) {
      const std::uint64_t s = op.shape[d];
      if (s > static_cast<std::uint64_t>(INT64_MAX)) fail("a dimension above INT64_MAX");
      if (s == 0) zero = true;
      else if (__builtin_mul_overflow(nonzero, s, &nonzero) || nonzero > INT64_MAX)
        fail("the sizes of a node's shape multiply beyond INT64_MAX");
    }
    count = zero ? 0 : nonzero;
    return count;
  }

  // Records the result of `op` with operands `preds` (indices, -1 for NULL).
  void result(const char* op, FGraphNode* r, std::vector<int> preds) {
    if (trace) {
      std::fprintf(stderr, "node %zu = ", nodes_.size());
      for (int p : preds) std::fprintf(stderr, "%d ", p);
      print_node(op, r);
    }
    if (r == nullptr) {
      check_error(op);
      return;
    }
    if (r->operation.dimensions > kMaxRank) {
      // Too many dimensions for the argument arrays here: not kept. Freeing it gives its operands
      // back the reference it took, and (as fFreeGraph frees every predecessor whose counter
      // reaches 0) frees an operand that nothing else uses.
      fFreeGraph(r);
      for (int p : preds)
        if (p >= 0 && !nodes_[p].freed && nodes_[p].users == 0) mark_freed(p);
      return;
    }
    Entry e;
    e.node = r;
    e.big = numel_of(r) > kEvalLimit;
    for (int p : preds) {
      if (p < 0) fail("a node was built from a NULL operand");
      e.big = e.big || nodes_[p].big;
      ++nodes_[p].users;
    }
    e.preds = std::move(preds);
    nodes_.push_back(std::move(e));
  }

  // ---- executing ----

  void execute(int i, int how) {
    if (i < 0) {
      arm();
      if (fExecuteGraph(nullptr) != nullptr) fail("fExecuteGraph(NULL) succeeded");
      check_error("fExecuteGraph");
      return;
    }
    Entry& e = nodes_[i];
    if (e.big || e.freed) return;
    if (trace) {
      std::fprintf(stderr, "execute node %d (way %d), op %d of ", i, how % 4,
                   static_cast<int>(e.node->operation.op_type));
      print_node("", e.node);
    }
    arm();
    FGraphNode* r = nullptr;
    switch (how % 4) {
      case 0: r = fCalculateResult(e.node); break;
      case 1: r = fExecuteGraph(e.node); break;
      case 2: r = fExecuteGraph_cpu_eagerly(e.node); break;
      default:
        if (fExecuteGraph_gpu(e.node) != nullptr || fErrorType() != OCL_ERROR)
          fail("fExecuteGraph_gpu did not fail with OCL_ERROR");
        return;
    }
    if (r == nullptr) {
      check_error("execution");
      // Indices only known when executing, and memory, are the errors execution may report.
      if (fErrorType() != INVALID_SELECT && fErrorType() != OUT_OF_MEMORY)
        fail("execution failed with an unexpected error type");
      return;
    }
    if (r != e.node) fail("execution returned another node");
    const FResultData* data = fSyncMemory(r);
    if (data == nullptr || data != r->result_data) fail("no result after execution");
    if (data->num_entries != numel_of(r)) fail("result size differs from the shape");
    const std::size_t width = r->operation.data_type == F_INT32 || r->operation.data_type == F_FLOAT32 ? 4 : 8;
    const auto* bytes = static_cast<const unsigned char*>(data->data);
    unsigned sum = 0;
    for (std::size_t k = 0; k < data->num_entries * width; ++k) sum += bytes[k];
    volatile unsigned sink = sum;
    (void)sink;
  }

  // ---- freeing ----

  void drop_user(int i) {
    if (nodes_[i].users == 0) fail("bookkeeping: a user count below 0");
    if (--nodes_[i].users == 0) mark_freed(i);
  }
  void mark_freed(int i) {
    nodes_[i].freed = true;
    for (int p : nodes_[i].preds) drop_user(p);
  }

  void finish() {
    for (int c = 0; c < contexts_; ++c) fStopGradientContext();
    contexts_ = 0;
    for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
      if (!nodes_[i].freed && nodes_[i].node->reference_counter != nodes_[i].users)
        fail("a reference counter differs from the number of nodes built on the node");
      execute(i, 0);
    }
    FGraphNode* stale = nullptr;
    for (int i = static_cast<int>(nodes_.size()) - 1; i >= 0; --i) {
      if (nodes_[i].freed || nodes_[i].users != 0) continue;
      if (nodes_[i].node->reference_counter != 0) fail("a root is still referenced");
      stale = nodes_[i].node;
      arm();
      fFreeGraph(nodes_[i].node);
      if (fErrorType() != OCL_ERROR) fail("fFreeGraph of a live root reported an error");
      mark_freed(i);
    }
    for (const Entry& e : nodes_)
      if (!e.freed) fail("bookkeeping: a node was never freed");
    if (stale != nullptr) {
      // A freed node is detected (the registry knows only live nodes).
      arm();
      fFreeGraph(stale);
      if (fErrorType() != INVALID_SELECT) fail("fFreeGraph of a freed node was not INVALID_SELECT");
    }
    nodes_.clear();
  }

  // ---- creating nodes from fuzz bytes ----

  void create() {
    const std::uint8_t mode = in_.u8();
    FType type = static_cast<FType>(mode % 4);
    if (mode >= 250) type = static_cast<FType>(mode % 7 + 4);  // not a type
    size_t shape[kArray];
    int rank = 1 + in_.u8() % 4;
    std::uint64_t count = 1;
    for (int k = 0; k < kArray; ++k) shape[k] = 1;
    const bool hostile = (mode & 0x70) == 0x70;
    for (int k = 0; k < rank; ++k) {
      shape[k] = hostile ? size_value(in_) : in_.u8() % 5;
      if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(shape[k]), &count)) count = ~0ull;
    }
    int num = count <= 64 ? static_cast<int>(count) : 64;
    const std::uint8_t mismatch = in_.u8();
    if (mismatch == 0xFE) num += 1;
    if (mismatch == 0xFD) num = -1;
    if (mismatch == 0xFC) rank = 0;
    if (mismatch == 0xFB) rank = -3;
    // Up to 65 values (64, one more for a mismatching count) of up to 8 bytes.
    alignas(8) unsigned char data[65 * 8];
    for (int k = 0; k < (num > 0 ? num : 0); ++k) {
      const std::uint8_t b = in_.u8();
      switch (type) {
        case F_INT32: {
          const std::int32_t v = (b & 0x80) ? static_cast<std::int32_t>(int_value(in_)) : b % 7 - 2;
          std::memcpy(data + 4 * k, &v, 4);
          break;
        }
        case F_INT64: {
          const std::int64_t v = (b & 0x80) ? long_value(in_) : b % 7 - 2;
          std::memcpy(data + 8 * k, &v, 8);
          break;
        }
        case F_FLOAT32: {
          const float v = static_cast<float>(double_value(in_));
          std::memcpy(data + 4 * k, &v, 4);
          break;
        }
        default: {
          const double v = double_value(in_);
          std::memcpy(data + 8 * k, &v, 8);
          break;
        }
      }
    }
    const void* values = in_.u8() == 0xFF ? nullptr : data;
    const size_t* dims = in_.u8() == 0xFF ? nullptr : shape;
    arm();
    result("fCreateGraph", fCreateGraph(values, num, type, dims, rank), {});
  }

  void generated(std::uint8_t which) {
    size_t shape[kArray];
    const int rank = rank_value(in_);
    for (int k = 0; k < kArray; ++k) shape[k] = k < rank ? size_value(in_) : 1;
    const size_t* s = null_array() ? nullptr : shape;
    arm();
    switch (which % 6) {
      case 0: result("fconstant_i", fconstant_i(int_value(in_), s, rank), {}); break;
      case 1: result("fconstant_l", fconstant_l(long_value(in_), s, rank), {}); break;
      case 2:
        result("fconstant_f", fconstant_f(static_cast<float>(double_value(in_)), s, rank), {});
        break;
      case 3: result("fconstant_d", fconstant_d(double_value(in_), s, rank), {}); break;
      case 4: result("frandom", frandom(s, rank), {}); break;
      default: result("farange", farange(s, rank, int_value(in_)), {}); break;
    }
  }

  // ---- operations on nodes ----

  void binary(std::uint8_t which) {
    using Fn = FGraphNode* (*)(FGraphNode*, FGraphNode*);
    static constexpr Fn fns[] = {fadd_g,    fsub_g, fdiv_g, fmul_g, fpow_g,  fless_g,
                                 fgreater_g, fequal_g, fmin_g, fmax_g, fmatmul};
    const int a = pick_index(), b = pick_index();
    arm();
    result("binary op", fns[which % (sizeof fns / sizeof fns[0])](node_at(a), node_at(b)), {a, b});
  }

  void scalar(std::uint8_t which) {
    const int a = pick_index();
    FGraphNode* x = node_at(a);
    const int i = int_value(in_);
    const long l = long_value(in_);
    const double d = double_value(in_);
    const float f = static_cast<float>(d);
    FGraphNode* r = nullptr;
    arm();
    switch (which % 56) {
      case 0: r = fadd_ci(x, i); break;
      case 1: r = fadd_cl(x, l); break;
      case 2: r = fadd_cf(x, f); break;
      case 3: r = fadd_cd(x, d); break;
      case 4: r = fsub_ci(x, i); break;
      case 5: r = fsub_cl(x, l); break;
      case 6: r = fsub_cf(x, f); break;
      case 7: r = fsub_cd(x, d); break;
      case 8: r = fsub_ici(i, x); break;
      case 9: r = fsub_icl(l, x); break;
      case 10: r = fsub_icf(f, x); break;
      case 11: r = fsub_icd(d, x); break;
      case 12: r = fdiv_ci(x, i); break;
      case 13: r = fdiv_cl(x, l); break;
      case 14: r = fdiv_cf(x, f); break;
      case 15: r = fdiv_cd(x, d); break;
      case 16: r = fdiv_ici(i, x); break;
      case 17: r = fdiv_icl(l, x); break;
      case 18: r = fdiv_icf(f, x); break;
      case 19: r = fdiv_icd(d, x); break;
      case 20: r = fmul_ci(x, i); break;
      case 21: r = fmul_cl(x, l); break;
      case 22: r = fmul_cf(x, f); break;
      case 23: r = fmul_cd(x, d); break;
      case 24: r = fpow_ci(x, i); break;
      case 25: r = fpow_cl(x, l); break;
      case 26: r = fpow_cf(x, f); break;
      case 27: r = fpow_cd(x, d); break;
      case 28: r = fless_ci(x, i); break;
      case 29: r = fless_cl(x, l); break;
      case 30: r = fless_cf(x, f); break;
      case 31: r = fless_cd(x, d); break;
      case 32: r = fgreater_ci(x, i); break;
      case 33: r = fgreater_cl(x, l); break;
      case 34: r = fgreater_cf(x, f); break;
      case 35: r = fgreater_cd(x, d); break;
      case 36: r = fequal_ci(x, i); break;
      case 37: r = fequal_cl(x, l); break;
      case 38: r = fequal_cf(x, f); break;
      case 39: r = fequal_cd(x, d); break;
      case 40: r = fmin_ci(x, i); break;
      case 41: r = fmin_cl(x, l); break;
      case 42: r = fmin_cf(x, f); break;
      case 43: r = fmin_cd(x, d); break;
      case 44: r = fmax_ci(x, i); break;
      case 45: r = fmax_cl(x, l); break;
      case 46: r = fmax_cf(x, f); break;
      case 47: r = fmax_cd(x, d); break;
      default: {
        // Dropout's probability: valid in [0, 1], anything else INVALID_SELECT.
        static constexpr double ps[] = {0.0, 0.5, 1.0, -0.25, 1.5};
        const std::uint8_t b = in_.u8();
        r = fdropout(x, b < 200 ? ps[b % 5] : d);
        break;
      }
    }
    result("scalar op", r, {a});
  }

  void unary(std::uint8_t which) {
    using Fn = FGraphNode* (*)(FGraphNode*);
    static constexpr Fn fns[] = {flog, flog2, flog10, fsin,  fsqrt_g, fexp,   fcos,    ftan,
                                 fasin, facos, fatan, fneg, fsign,   feven,  fabs_g, fflatten};
    const int a = pick_index();
    arm();
    result("unary op", fns[which % (sizeof fns / sizeof fns[0])](node_at(a)), {a});
  }

  void axis_op(std::uint8_t which) {
    const int a = pick_index();
    FGraphNode* x = node_at(a);
    const int ax = int_value(in_);
    FGraphNode* r = nullptr;
    arm();
    switch (which % 8) {
      case 0: r = freduce_sum(x, ax); break;
      case 1: r = freduce_mul(x, ax); break;
      case 2: r = freduce_min(x, ax); break;
      case 3: r = freduce_max(x, ax); break;
      case 4: r = fflatten_dimension(x, ax); break;
      case 5: r = fconvert(x, static_cast<FType>(in_.u8() < 240 ? ax & 3 : ax)); break;
      case 6: {
        const unsigned axis = unsigned_value(in_);
        // A permutation holds one index per slice along the axis: a lazily huge node would
        // legitimately need gigabytes for it.
        if (a >= 0 && nodes_[a].big) return;
        r = fpermutate(x, axis);
        break;
      }
      default: {
        const unsigned axis = unsigned_value(in_);
        r = fexpand(x, axis, unsigned_value(in_));
        break;
      }
    }
    result("axis op", r, {a});
  }

  void reshape() {
    const int a = pick_index();
    size_t shape[kArray];
    for (int k = 0; k < kArray; ++k) shape[k] = 1;
    int rank = 1;
    const int r = rank_of(a);
    switch (in_.u8() % 4) {
      case 0:  // the same number of elements, flattened
        shape[0] = a < 0 ? 1 : numel_of(node_at(a));
        break;
      case 1:  // the dimensions reversed
        rank = r;
        for (int k = 0; k < r && k < kArray; ++k) shape[k] = dim_of(a, r - 1 - k);
        break;
      case 2:  // a 1 inserted
        rank = r + 1 > kArray ? kArray : r + 1;
        for (int k = 0, j = 0; k < rank; ++k) shape[k] = k == 1 ? 1 : dim_of(a, j++);
        break;
      default:
        rank = rank_value(in_);
        for (int k = 0; k < rank && k < kArray; ++k) shape[k] = size_value(in_);
        break;
    }
    arm();
    result("freshape", freshape(node_at(a), null_array() ? nullptr : shape, rank), {a});
  }

  void slice(bool stepped) {
    const int a = pick_index();
    const int r = rank_of(a);
    long start[kArray], end[kArray], step[kArray];
    auto gen = [this] { return long_value(in_); };
    const long* s = fill(start, r, -1, gen);
    const long* e = fill(end, r, a, gen);
    arm();
    if (stepped) {
      const long* t = fill(step, r, -1, gen);
      result("fslice_step", fslice_step(node_at(a), s, e, t), {a});
    } else {
      result("fslice", fslice(node_at(a), s, e), {a});
    }
  }

  void extend(bool stepped) {
    const int a = pick_index();
    const int r = rank_of(a);
    size_t shape[kArray], at[kArray];
    long step[kArray];
    const size_t* s = fill(shape, r, a, [this] {
      const size_t v = size_value(in_);
      return v + in_.u8() % 3;
    });
    const size_t* i = fill(at, r, -1, [this] { return size_value(in_); });
    arm();
    if (stepped) {
      const long* t = fill(step, r, -1, [this] { return long_value(in_); });
      if (trace && s && i && t)
        for (int k = 0; k < r; ++k)
          std::fprintf(stderr, "  dimension %d: new size %zu, insert at %zu, step %ld\n", k, s[k],
                       i[k], t[k]);
      result("fextend_step", fextend_step(node_at(a), s, i, t), {a});
    } else {
      result("fextend", fextend(node_at(a), s, i), {a});
    }
  }

  void concat() {
    const int a = pick_index(), b = pick_index();
    arm();
    result("fconcat", fconcat(node_at(a), node_at(b), unsigned_value(in_)), {a, b});
  }

  void repeat() {
    const int a = pick_index();
    int reps[kArray];
    int* p = fill(reps, rank_of(a), -1, [this] { return int_value(in_); });
    arm();
    result("frepeat", frepeat(node_at(a), p), {a});
  }

  void transpose() {
    const int a = pick_index();
    const int r = rank_of(a);
    int perm[kArray];
    for (int k = 0; k < kArray; ++k) perm[k] = k;
    if (in_.u8() < 200) {
      // A real permutation (Fisher-Yates driven by the input).
      for (int k = r - 1; k > 0 && k < kArray; --k) {
        const int j = in_.u8() % (k + 1);
        const int t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
      }
    } else {
      for (int k = 0; k < r && k < kArray; ++k) perm[k] = int_value(in_);
    }
    arm();
    result("ftranspose", ftranspose(node_at(a), null_array() ? nullptr : perm), {a});
  }

  void window(std::uint8_t which) {
    const int a = pick_index();
    const int r = rank_of(a);
    size_t sizes[kArray];
    unsigned steps[kArray];
    auto gen_size = [this] { return size_value(in_); };
    auto gen_step = [this] { return unsigned_value(in_); };
    FGraphNode* x = node_at(a);
    switch (which % 5) {
      case 0: {
        const size_t* s = fill(sizes, r, -1, gen_size);
        const unsigned* t = fill(steps, r, -1, gen_step);
        arm();
        result("fsliding_window", fsliding_window(x, s, t), {a});
        break;
      }
      case 1: {
        const size_t* s = fill(sizes, r - 1, a, gen_size);
        const unsigned* t = fill(steps, r - 1, -1, gen_step);
        arm();
        result("funslide_window", funslide_window(x, s, t), {a});
        break;
      }
      case 2:
      case 3: {
        const size_t* s = fill(sizes, r - 1, -1, gen_size);
        const unsigned* t = fill(steps, r - 1, -1, gen_step);
        arm();
        result("fpooling", which % 5 == 2 ? fpooling_sum(x, s, t) : fpooling_max(x, s, t), {a});
        break;
      }
      default: {
        const int k = pick_index();
        const unsigned* t = fill(steps, r - 1, -1, gen_step);
        arm();
        result("fconvolve", fconvolve(x, node_at(k), t), {a, k});
        break;
      }
    }
  }

  void indexing(bool set) {
    const int a = pick_index(), b = pick_index();
    arm();
    if (set) {
      const int i = pick_index();
      result("findex_set", findex_set(node_at(a), node_at(b), node_at(i)), {a, b, i});
    } else {
      result("findex", findex(node_at(a), node_at(b)), {a, b});
    }
  }

  void serialize() {
    const int a = pick_index();
    if (a >= 0 && nodes_[a].big) return;  // fserialize executes the node
    size_t n = 0;
    arm();
    char* bytes = fserialize(node_at(a), in_.u8() == 0xFF ? nullptr : &n);
    if (bytes == nullptr) {
      check_error("fserialize");
      return;
    }
    if (n == 0) {
      std::free(bytes);
      return;
    }
    // Sometimes a truncated or corrupted copy: IO_ERROR, never a crash.
    const std::uint8_t how = in_.u8();
    size_t avail = n;
    if (how == 1) avail = n / 2;
    if (how == 2) {
      const size_t at = in_.u8() % n;
      bytes[at] = static_cast<char>(bytes[at] ^ (1 + in_.u8() % 255));
    }
    arm();
    FGraphNode* back = fdeserialize(bytes, &avail);
    if (back == nullptr) {
      check_error("fdeserialize");
      if (how == 0) fail("fdeserialize rejected fserialize's output");
    }
    std::free(bytes);
    if (back != nullptr) result("fdeserialize", back, {});
  }

  void gradient(std::uint8_t which) {
    switch (which % 6) {
      case 0:
        if (contexts_ < 4) {
          fStartGradientContext();
          ++contexts_;
        }
        return;
      case 1:
        if (contexts_ > 0) {
          fStopGradientContext();
          --contexts_;
        }
        return;
      case 2: {
        const int a = pick_index();
        arm();
        if (in_.u8() & 1) fMarkGradientVariable(node_at(a));
        else fUnmarkGradientVariable(node_at(a));
        if (a < 0) check_error("fMarkGradientVariable");
        return;
      }
      case 3: {
        const int y = pick_index(), x = pick_index();
        arm();
        FGraphNode* g = fCalculateGradient(node_at(y), node_at(x));
        result("fCalculateGradient", g, {});
        if (g != nullptr && ((y >= 0 && nodes_[y].big) || (x >= 0 && nodes_[x].big)))
          nodes_.back().big = true;
        return;
      }
      case 4: {
        const int y = pick_index(), x1 = pick_index(), x2 = pick_index();
        FGraphNode* dx[2] = {node_at(x1), node_at(x2)};
        FGraphNode* out[2] = {nullptr, nullptr};
        const unsigned count = in_.u8() % 3;
        arm();
        const FErrorType e = fCalculateGradients(node_at(y), dx, count, out);
        if (e != NO_ERROR) {
          if (e != fErrorType()) fail("fCalculateGradients returned another error than it set");
          check_error("fCalculateGradients");
          if (out[0] != nullptr || out[1] != nullptr) fail("fCalculateGradients wrote on error");
          return;
        }
        const bool big = (y >= 0 && nodes_[y].big) || (x1 >= 0 && nodes_[x1].big) ||
                         (x2 >= 0 && nodes_[x2].big);
        for (unsigned k = 0; k < count; ++k) {
          if (out[k] == nullptr) fail("fCalculateGradients gave no gradient");
          result("fCalculateGradients", out[k], {});
          nodes_.back().big = nodes_.back().big || big;
        }
        return;
      }
      default: {
        const int a = pick_index();
        arm();
        if (in_.u8() & 1) fEnforceInverseBroadcasting(node_at(a));
        else fUnenforceInverseBroadcasting(node_at(a));
        if (a < 0) check_error("fEnforceInverseBroadcasting");
        return;
      }
    }
  }

  void optimize_memory() {
    const int a = pick_index();
    if (a < 0) {
      arm();
      if (fOptimizeMemory(nullptr) != nullptr) fail("fOptimizeMemory(NULL) succeeded");
      check_error("fOptimizeMemory");
      return;
    }
    Entry& e = nodes_[a];
    const int before = e.node->num_predecessor;
    arm();
    FGraphNode* r = fOptimizeMemory(e.node);
    if (r == nullptr) {
      check_error("fOptimizeMemory");
      return;
    }
    if (r != e.node) fail("fOptimizeMemory returned another node");
    if (before > 0 && r->num_predecessor == 0) {
      // Its operands lost one user each (and are freed when that was the last).
      std::vector<int> preds = std::move(nodes_[a].preds);
      nodes_[a].preds.clear();
      for (int p : preds) drop_user(p);
    } else if (r->num_predecessor != before) {
      fail("fOptimizeMemory changed the predecessors partly");
    }
  }

  // kiln's PyTorch-style windows (C++ API: strides, padding and dilation), on a small input.
  void cxx_windows(std::uint8_t which) {
    const std::int64_t n = 1 + in_.u8() % 2, c = 1 + in_.u8() % 2, h = in_.u8() % 6,
                       w = in_.u8() % 6;
    const std::int64_t kh = in_.u8() < 220 ? 1 + in_.u8() % 3 : i64_value(in_);
    const std::int64_t kw = in_.u8() < 220 ? 1 + in_.u8() % 3 : i64_value(in_);
    const std::array<std::int64_t, 2> stride{i64_value(in_), i64_value(in_)};
    const std::array<std::int64_t, 2> padding{i64_value(in_) % 3 == 0 ? 0 : i64_value(in_),
                                              i64_value(in_)};
    std::array<std::int64_t, 2> dilation{1 + in_.u8() % 2, 1 + in_.u8() % 2};
    if (in_.u8() >= 200) dilation = {i64_value(in_), i64_value(in_)};
    try {
      const kiln::Tensor x = kiln::arange(kiln::Shape{n, c, h, w}, 3);
      const kiln::Tensor xf = kiln::convert(x, kiln::DType::f32);
      kiln::Tensor y;
      switch (which % 3) {
        case 0: {
          const std::int64_t o = 1 + in_.u8() % 3;
          const kiln::Tensor wt = kiln::ones(kiln::Shape{o, c, kh, kw});
          y = kiln::conv2d(xf, wt, in_.u8() & 1 ? kiln::ones(kiln::Shape{o}) : kiln::Tensor(),
                           {.stride = stride, .padding = padding, .dilation = dilation});
          break;
        }
        case 1:
          y = kiln::max_pool2d(xf, {kh, kw},
                               {.stride = stride, .padding = padding, .dilation = dilation});
          break;
        default:
          y = kiln::avg_pool2d(xf, {kh, kw},
                               {.stride = stride, .padding = padding, .dilation = dilation});
          break;
      }
      std::uint64_t count = 1;
      for (std::int64_t s : y.shape()) {
        if (s < 0) fail("a C++ window op gave a negative size");
        if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(s), &count) ||
            count > INT64_MAX)
          fail("a C++ window op gave a shape whose size overflows");
      }
      if (count <= kEvalLimit) {
        const std::vector<float> v = y.to_vector<float>();
        if (v.size() != count) fail("a C++ window op's result differs from its shape");
      }
    } catch (const kiln::Error& e) {
      if (e.code() == kiln::ErrorCode::internal_error) fail(e.what());
    } catch (const std::bad_alloc&) {
      // A size that could not be allocated.
    }
  }

  void one_call() {
    const std::uint8_t op = in_.u8();
    const std::uint8_t which = in_.u8();
    switch (op % 24) {
      case 0: case 1: case 2: create(); break;
      case 3: generated(which); break;
      case 4: case 5: binary(which); break;
      case 6: case 7: scalar(which); break;
      case 8: unary(which); break;
      case 9: case 10: axis_op(which); break;
      case 11: reshape(); break;
      case 12: slice(which & 1); break;
      case 13: extend(which & 1); break;
      case 14: concat(); break;
      case 15: repeat(); break;
      case 16: transpose(); break;
      case 17: case 18: window(which); break;
      case 19: indexing(which & 1); break;
      case 20: serialize(); break;
      case 21: gradient(which); break;
      case 22:
        if (which & 1) optimize_memory();
        else execute(pick_index(), in_.u8());
        break;
      default: cxx_windows(which); break;
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln_fuzz::setup_process();
  fSetLoggingLevel(F_NO_LOGGING);
  // The harness fuzzes the C API on the CPU: no OpenCL device is chosen, so the GPU functions
  // must fail with OCL_ERROR (which also serves as the sentinel error, since no op reports it).
  // The OpenCL backend is tested against the reference by the test suite.
  setenv("KILN_OPENCL_DEVICE", "(none: the graph fuzzer runs on the CPU)", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  Program program(in);
  program.run();
  return 0;
}
