// Views: op names, laziness, immutability, and a randomized test of chains of view ops against a
// plain materialising reference model written independently of kiln.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using Index = std::vector<std::int64_t>;
using Vd = std::vector<double>;

// ---------------------------------------------------------------------------------------------
// The reference model: a shape and its values in row-major order, every op materialised.
// ---------------------------------------------------------------------------------------------

struct Model {
  Shape shape;
  std::vector<double> values;
};

std::int64_t count_of(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string str(const std::vector<std::int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << "]";
  return os.str();
}
std::string str(const std::vector<int>& v) {
  return str(std::vector<std::int64_t>(v.begin(), v.end()));
}

// Value of `m` at multi-index `idx`.
double at(const Model& m, const Index& idx) {
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < m.shape.size(); ++d) flat = flat * m.shape[d] + idx[d];
  return m.values[static_cast<std::size_t>(flat)];
}

// A model of `shape` whose value at each multi-index o is f(o).
template <class F> Model build(const Shape& shape, F f) {
  Model r{shape, {}};
  const std::int64_t n = count_of(shape);
  r.values.reserve(static_cast<std::size_t>(n));
  Index o(shape.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    r.values.push_back(f(o));
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++o[static_cast<std::size_t>(d)] < shape[static_cast<std::size_t>(d)]) break;
      o[static_cast<std::size_t>(d)] = 0;
    }
  }
  return r;
}

Model m_reshape(const Model& a, const Shape& s) { return Model{s, a.values}; }

Model m_permute(const Model& a, const std::vector<int>& perm) {
  Shape s(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) s[i] = a.shape[static_cast<std::size_t>(perm[i])];
  return build(s, [&](const Index& o) {
    Index j(o.size());
    for (std::size_t i = 0; i < o.size(); ++i) j[static_cast<std::size_t>(perm[i])] = o[i];
    return at(a, j);
  });
}

// Python's slice.indices(n): first index, element count.
struct Span1 {
  std::int64_t first = 0, count = 0;
};
Span1 py_slice(std::int64_t n, std::int64_t start, std::int64_t stop, std::int64_t step) {
  Span1 r;
  if (step > 0) {
    if (start < 0) start += n;
    if (start < 0) start = 0;
    if (start > n) start = n;
    if (stop < 0) stop += n;
    if (stop < 0) stop = 0;
    if (stop > n) stop = n;
    r.count = stop > start ? (stop - start + step - 1) / step : 0;
  } else {
    if (start < 0) start += n;
    if (start < 0) start = -1;
    if (start > n - 1) start = n - 1;
    if (stop < 0) stop += n;
    if (stop < 0) stop = -1;
    if (stop > n - 1) stop = n - 1;
    r.count = start > stop ? (start - stop + (-step) - 1) / (-step) : 0;
  }
  r.first = start;
  return r;
}

Model m_slice(const Model& a, const Index& start, const Index& stop, const Index& step) {
  const std::size_t rank = a.shape.size();
  std::vector<Span1> sp(rank);
  Shape s(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    sp[d] = py_slice(a.shape[d], start[d], stop[d], step[d]);
    s[d] = sp[d].count;
  }
  return build(s, [&](const Index& o) {
    Index j(rank);
    for (std::size_t d = 0; d < rank; ++d) j[d] = sp[d].first + o[d] * step[d];
    return at(a, j);
  });
}

Model m_pad(const Model& a, const Index& before, const Index& after, double value) {
  const std::size_t rank = a.shape.size();
  Shape s(rank);
  for (std::size_t d = 0; d < rank; ++d) s[d] = before[d] + a.shape[d] + after[d];
  return build(s, [&](const Index& o) {
    Index j(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      j[d] = o[d] - before[d];
      if (j[d] < 0 || j[d] >= a.shape[d]) return value;
    }
    return at(a, j);
  });
}

// Broadcast aligned at the right (normal) or at the left (inverse).
Model m_broadcast(const Model& a, const Shape& target, bool inverse) {
  const std::size_t rank = a.shape.size();
  const std::size_t offset = inverse ? 0 : target.size() - rank;
  return build(target, [&](const Index& o) {
    Index j(rank);
    for (std::size_t d = 0; d < rank; ++d) j[d] = a.shape[d] == 1 ? 0 : o[d + offset];
    return at(a, j);
  });
}

Model m_expand(const Model& a, int axis, std::int64_t size) {
  Shape s = a.shape;
  s.insert(s.begin() + axis, size);
  return build(s, [&](const Index& o) {
    Index j = o;
    j.erase(j.begin() + axis);
    return at(a, j);
  });
}

Model m_repeat(const Model& a, const Index& reps) {
  const std::size_t rank = a.shape.size();
  Shape s(rank);
  for (std::size_t d = 0; d < rank; ++d) s[d] = a.shape[d] * reps[d];
  return build(s, [&](const Index& o) {
    Index j(rank);
    for (std::size_t d = 0; d < rank; ++d) j[d] = o[d] % a.shape[d];
    return at(a, j);
  });
}

Model m_extend(const Model& a, const Shape& shape, const Index& insert, const Index& step) {
  const std::size_t rank = a.shape.size();
  return build(shape, [&](const Index& o) {
    Index j(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t abs_step = step[d] < 0 ? -step[d] : step[d];
      const std::int64_t rel = o[d] - insert[d];
      if (rel < 0 || rel % abs_step != 0) return 0.0;
      std::int64_t k = rel / abs_step;
      if (k >= a.shape[d]) return 0.0;
      if (step[d] < 0) k = a.shape[d] - 1 - k;
      j[d] = k;
    }
    return at(a, j);
  });
}

Model m_scale(const Model& a, double f) {
  Model r = a;
  for (auto& v : r.values) v *= f;
  return r;
}

// Compares a kiln tensor with the model: shape, dtype and every value exactly.
::testing::AssertionResult matches(const Tensor& t, const Model& m, DType dtype,
                                   const char* what) {
  if (t.shape() != m.shape) {
    return ::testing::AssertionFailure() << what << ": shape " << str(t.shape())
                                         << ", model " << str(m.shape);
  }
  if (t.dtype() != dtype) {
    return ::testing::AssertionFailure() << what << ": dtype " << static_cast<int>(t.dtype())
                                         << ", expected " << static_cast<int>(dtype);
  }
  const std::vector<double> got = t.to_vector<double>();
  if (got.size() != m.values.size()) {
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " values, model " << m.values.size();
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == m.values[i])) {
      return ::testing::AssertionFailure() << what << ": value " << i << " (row-major) is "
                                           << got[i] << ", model " << m.values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------------------------
// Random chains of view ops.
// ---------------------------------------------------------------------------------------------

class Rng {
 public:
  explicit Rng(std::uint32_t seed) : g_(seed) {}
  // Uniform in [lo, hi]; written out so that the sequence is the same on every standard library.
  std::int64_t in(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(g_() % static_cast<std::uint32_t>(hi - lo + 1));
  }
  bool chance(int percent) { return in(0, 99) < percent; }
  std::uint32_t raw() { return g_(); }

 private:
  std::mt19937 g_;
};

struct Step {
  std::string desc;
  std::function<Tensor(const Tensor&)> op;
  Model result;
};

constexpr std::int64_t kMaxNumel = 1200;
constexpr std::size_t kMaxRank = 6;

enum Kind {
  k_reshape,
  k_permute,
  k_slice,
  k_slice_axis,
  k_pad,
  k_broadcast,
  k_expand,
  k_unsqueeze,
  k_squeeze,
  k_transpose,
  k_repeat,
  k_extend,
  k_count
};

Shape random_factorisation(Rng& rng, std::int64_t n) {
  const int rank = static_cast<int>(rng.in(1, 4));
  Shape s;
  std::int64_t rest = n;
  for (int d = 0; d + 1 < rank; ++d) {
    std::vector<std::int64_t> divisors;
    for (std::int64_t k = 1; k <= rest; ++k)
      if (rest % k == 0) divisors.push_back(k);
    const std::int64_t k = divisors[static_cast<std::size_t>(
        rng.in(0, static_cast<std::int64_t>(divisors.size()) - 1))];
    s.push_back(k);
    rest /= k;
  }
  s.push_back(rest);
  return s;
}

// A negative spelling of `axis` in a rank-`rank` context, half of the time.
int maybe_negative(Rng& rng, int axis, int rank) {
  return rng.chance(50) ? axis - rank : axis;
}

// Tries to make a step of kind `kind` for model `m`; returns false where the kind does not apply.
bool make_step(Rng& rng, Kind kind, const Model& m, bool integer, Step& out) {
  const int rank = static_cast<int>(m.shape.size());
  std::ostringstream desc;
  switch (kind) {
    case k_reshape: {
      Shape target = random_factorisation(rng, count_of(m.shape));
      Shape arg = target;
      if (rng.chance(40)) arg[static_cast<std::size_t>(rng.in(0, (std::int64_t)arg.size() - 1))] = -1;
      desc << "reshape(" << str(arg) << ")";
      out.op = [arg](const Tensor& t) { return kiln::reshape(t, arg); };
      out.result = m_reshape(m, target);
      break;
    }
    case k_permute: {
      if (rank < 1) return false;
      std::vector<int> perm(static_cast<std::size_t>(rank));
      for (int i = 0; i < rank; ++i) perm[static_cast<std::size_t>(i)] = i;
      for (int i = rank - 1; i > 0; --i)
        std::swap(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(rng.in(0, i))]);
      desc << "permute(" << str(perm) << ")";
      out.op = [perm](const Tensor& t) { return kiln::permute(t, perm); };
      out.result = m_permute(m, perm);
      break;
    }
    case k_slice:
    case k_slice_axis: {
      if (rank < 1) return false;
      Index start(static_cast<std::size_t>(rank)), stop(start), step(start);
      const int only = kind == k_slice_axis ? static_cast<int>(rng.in(0, rank - 1)) : -1;
      for (int d = 0; d < rank; ++d) {
        const auto du = static_cast<std::size_t>(d);
        const std::int64_t n = m.shape[du];
        if (only >= 0 && d != only) {
          start[du] = 0;
          stop[du] = n;
          step[du] = 1;
          continue;
        }
        bool ok = false;
        for (int attempt = 0; attempt < 40 && !ok; ++attempt) {
          static const std::int64_t steps[] = {-3, -2, -1, -1, 1, 1, 1, 2, 3};
          step[du] = steps[rng.in(0, 8)];
          start[du] = rng.in(-n - 2, n + 2);
          stop[du] = rng.in(-n - 2, n + 2);
          ok = py_slice(n, start[du], stop[du], step[du]).count > 0;
        }
        if (!ok) {
          start[du] = 0;
          stop[du] = n;
          step[du] = 1;
        }
      }
      bool all_one = true;
      for (auto s : step) all_one = all_one && s == 1;
      if (kind == k_slice_axis) {
        const auto ou = static_cast<std::size_t>(only);
        const int axis_arg = maybe_negative(rng, only, rank);
        const std::int64_t b = start[ou], e = stop[ou], st = step[ou];
        desc << "slice_axis(" << axis_arg << ", " << b << ", " << e << ", " << st << ")";
        out.op = [axis_arg, b, e, st](const Tensor& t) {
          return kiln::slice_axis(t, axis_arg, b, e, st);
        };
      } else if (all_one && rng.chance(50)) {
        desc << "slice(" << str(start) << ", " << str(stop) << ")";
        out.op = [start, stop](const Tensor& t) { return kiln::slice(t, start, stop); };
      } else {
        desc << "slice(" << str(start) << ", " << str(stop) << ", " << str(step) << ")";
        out.op = [start, stop, step](const Tensor& t) {
          return kiln::slice(t, start, stop, step);
        };
      }
      out.result = m_slice(m, start, stop, step);
      break;
    }
    case k_pad: {
      if (rank < 1) return false;
      Index before(static_cast<std::size_t>(rank)), after(before);
      for (int d = 0; d < rank; ++d) {
        before[static_cast<std::size_t>(d)] = rng.in(0, 2);
        after[static_cast<std::size_t>(d)] = rng.in(0, 2);
      }
      static const double fills[] = {-1.5, 0.0, 2.25, 7.0, -4.0};
      double value = fills[rng.in(0, 4)];
      if (integer) value = static_cast<double>(static_cast<std::int64_t>(value));
      desc << "pad(" << str(before) << ", " << str(after) << ", " << value << ")";
      if (integer) {
        const long iv = static_cast<long>(value);
        out.op = [before, after, iv](const Tensor& t) {
          return kiln::pad(t, before, after, kiln::Scalar(iv));
        };
      } else {
        out.op = [before, after, value](const Tensor& t) {
          return kiln::pad(t, before, after, kiln::Scalar(value));
        };
      }
      out.result = m_pad(m, before, after, value);
      break;
    }
    case k_broadcast: {
      const bool inverse = rng.chance(30);
      Shape target = m.shape;
      for (auto& d : target)
        if (d == 1 && rng.chance(50)) d = rng.in(2, 3);
      const std::int64_t extra = rng.in(1, 3);
      if (inverse)
        target.push_back(extra);
      else
        target.insert(target.begin(), extra);
      desc << "broadcast_to(" << str(target) << (inverse ? ", inverse" : "") << ")";
      out.op = [target, inverse](const Tensor& t) {
        return kiln::broadcast_to(t, target, inverse);
      };
      out.result = m_broadcast(m, target, inverse);
      break;
    }
    case k_expand: {
      const int axis = static_cast<int>(rng.in(0, rank));
      const std::int64_t size = rng.in(1, 3);
      desc << "expand(" << axis << ", " << size << ")";
      out.op = [axis, size](const Tensor& t) { return kiln::unsqueeze_expand(t, axis, size); };
      out.result = m_expand(m, axis, size);
      break;
    }
    case k_unsqueeze: {
      const int axis = static_cast<int>(rng.in(0, rank));  // position in the result
      const int arg = rng.chance(50) ? axis - rank - 1 : axis;
      desc << "unsqueeze(" << arg << ")";
      out.op = [arg](const Tensor& t) { return kiln::unsqueeze(t, arg); };
      Shape s = m.shape;
      s.insert(s.begin() + axis, 1);
      out.result = m_reshape(m, s);
      break;
    }
    case k_squeeze: {
      if (rank < 1) return false;
      std::vector<int> ones;
      for (int d = 0; d < rank; ++d)
        if (m.shape[static_cast<std::size_t>(d)] == 1) ones.push_back(d);
      Shape s;
      if (!ones.empty() && rng.chance(60)) {
        const int axis = ones[static_cast<std::size_t>(
            rng.in(0, static_cast<std::int64_t>(ones.size()) - 1))];
        const int arg = maybe_negative(rng, axis, rank);
        desc << "squeeze(" << arg << ")";
        out.op = [arg](const Tensor& t) { return kiln::squeeze(t, arg); };
        s = m.shape;
        s.erase(s.begin() + axis);
      } else {
        desc << "squeeze()";
        out.op = [](const Tensor& t) { return kiln::squeeze(t); };
        for (auto d : m.shape)
          if (d != 1) s.push_back(d);
      }
      out.result = m_reshape(m, s);
      break;
    }
    case k_transpose: {
      if (rank < 2) return false;
      const int a = static_cast<int>(rng.in(0, rank - 1));
      int b = static_cast<int>(rng.in(0, rank - 2));
      if (b >= a) ++b;
      const int a_arg = maybe_negative(rng, a, rank), b_arg = maybe_negative(rng, b, rank);
      desc << "transpose(" << a_arg << ", " << b_arg << ")";
      out.op = [a_arg, b_arg](const Tensor& t) { return kiln::transpose(t, a_arg, b_arg); };
      std::vector<int> perm(static_cast<std::size_t>(rank));
      for (int i = 0; i < rank; ++i) perm[static_cast<std::size_t>(i)] = i;
      std::swap(perm[static_cast<std::size_t>(a)], perm[static_cast<std::size_t>(b)]);
      out.result = m_permute(m, perm);
      break;
    }
    case k_repeat: {
      if (rank < 1) return false;
      Index reps(static_cast<std::size_t>(rank));
      for (auto& r : reps) r = rng.chance(60) ? 1 : rng.in(2, 3);
      desc << "repeat(" << str(reps) << ")";
      out.op = [reps](const Tensor& t) { return kiln::repeat(t, reps); };
      out.result = m_repeat(m, reps);
      break;
    }
    case k_extend: {
      if (rank < 1) return false;
      Index insert(static_cast<std::size_t>(rank)), step(insert);
      Shape shape(static_cast<std::size_t>(rank));
      bool unit_steps = true;
      for (int d = 0; d < rank; ++d) {
        const auto du = static_cast<std::size_t>(d);
        static const std::int64_t steps[] = {-2, -1, 1, 1, 2, 3};
        step[du] = steps[rng.in(0, 5)];
        unit_steps = unit_steps && step[du] == 1;
        insert[du] = rng.in(0, 2);
        const std::int64_t abs_step = step[du] < 0 ? -step[du] : step[du];
        shape[du] = insert[du] + (m.shape[du] - 1) * abs_step + 1 + rng.in(0, 2);
      }
      if (unit_steps && rng.chance(50)) {
        desc << "extend(" << str(shape) << ", " << str(insert) << ")";
        out.op = [shape, insert](const Tensor& t) { return kiln::extend(t, shape, insert); };
      } else {
        desc << "extend(" << str(shape) << ", " << str(insert) << ", " << str(step) << ")";
        out.op = [shape, insert, step](const Tensor& t) {
          return kiln::extend(t, shape, insert, step);
        };
      }
      out.result = m_extend(m, shape, insert, step);
      break;
    }
    default:
      return false;
  }
  out.desc = desc.str();
  return count_of(out.result.shape) <= kMaxNumel && out.result.shape.size() <= kMaxRank;
}

Step random_step(Rng& rng, const Model& m, bool integer) {
  Step s;
  for (int attempt = 0; attempt < 30; ++attempt) {
    const Kind kind = static_cast<Kind>(rng.in(0, k_count - 1));
    if (make_step(rng, kind, m, integer, s)) return s;
  }
  // Reshaping never grows the tensor.
  Shape flat{count_of(m.shape)};
  s.desc = "reshape(" + str(flat) + ")";
  s.op = [flat](const Tensor& t) { return kiln::reshape(t, flat); };
  s.result = m_reshape(m, flat);
  return s;
}

struct Base {
  std::function<Tensor()> make;  // builds a fresh, equal base tensor on each call
  Model model;
  DType dtype;
  std::string desc;
};

Base random_base(Rng& rng, int iteration) {
  const int rank = static_cast<int>(rng.in(1, 4));
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(rng.in(1, 5));
  const std::int64_t n = count_of(shape);
  Base b;
  b.model.shape = shape;
  std::ostringstream desc;
  switch (iteration % 4) {
    case 0: {  // uniform values, read back from a separate but equal node
      const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(iteration);
      b.make = [shape, seed] { return kiln::uniform(shape, seed, DType::f64); };
      b.model.values = kiln::uniform(shape, seed, DType::f64).to_vector<double>();
      b.dtype = DType::f64;
      desc << "uniform(" << str(shape) << ", seed " << seed << ")";
      break;
    }
    case 1: {  // a stored leaf with distinct values
      std::vector<double> v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i)
        v[static_cast<std::size_t>(i)] = 0.5 * static_cast<double>(i) - 7.0;
      b.make = [v, shape] { return Tensor::from(v, shape); };
      b.model.values = v;
      b.dtype = DType::f64;
      desc << "from(0.5*i - 7, " << str(shape) << ")";
      break;
    }
    case 2: {  // a computed (not yet evaluated) node
      b.make = [shape, n] {
        return kiln::reshape(kiln::convert(kiln::arange(n), DType::f64) * 0.25 + 1.0, shape);
      };
      b.model.values.resize(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i)
        b.model.values[static_cast<std::size_t>(i)] = 0.25 * static_cast<double>(i) + 1.0;
      b.dtype = DType::f64;
      desc << "reshape(f64(arange(" << n << "))*0.25+1, " << str(shape) << ")";
      break;
    }
    default: {  // i64 values
      std::vector<std::int64_t> v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = 3 * i - 20;
      b.make = [v, shape] { return Tensor::from(v, shape); };
      b.model.values.assign(v.begin(), v.end());
      b.dtype = DType::i64;
      desc << "from(i64 3*i - 20, " << str(shape) << ")";
      break;
    }
  }
  b.desc = desc.str();
  return b;
}

// Checks a view (and uses of it) against the model. Returns false (after reporting) on mismatch.
bool check_view(const Tensor& v, const Model& m, DType dtype) {
  auto r = matches(v, m, dtype, "view");
  if (!r) {
    ADD_FAILURE() << r.message();
    return false;
  }
  r = matches(kiln::contiguous(v), m, dtype, "contiguous(view)");
  if (!r) {
    ADD_FAILURE() << r.message();
    return false;
  }
  // A weak scalar: the view's float type, or the default float type for an integer view.
  r = matches(v * 2.0, m_scale(m, 2.0), kiln::is_float(dtype) ? dtype : kiln::default_dtype(),
              "view * 2.0");
  if (!r) {
    ADD_FAILURE() << r.message();
    return false;
  }
  r = matches(v + v, m_scale(m, 2.0), dtype, "view + view");
  if (!r) {
    ADD_FAILURE() << r.message();
    return false;
  }
  return true;
}

TEST(Views, RandomChainsMatchReferenceModel) {
  Rng rng(20240611u);
  int failed_iterations = 0;
  for (int it = 0; it < 200 && failed_iterations < 3; ++it) {
    const Base base = random_base(rng, it);
    const bool integer = base.dtype == DType::i64;
    const int length = static_cast<int>(rng.in(1, 6));
    std::string chain = "iteration " + std::to_string(it) + ": " + base.desc;
    bool ok = true;
    try {
      // `t` is read after every step (so each op sees an evaluated input); `lazy` is built from
      // a separate, equal base with the same ops and read only at the end (composed views).
      Tensor t = base.make();
      Tensor lazy = base.make();
      Model model = base.model;
      {
        SCOPED_TRACE(chain);
        ok = check_view(t, model, base.dtype);
      }
      for (int k = 0; k < length && ok; ++k) {
        Step step = random_step(rng, model, integer);
        chain += " -> " + step.desc;
        SCOPED_TRACE(chain);
        t = step.op(t);
        lazy = step.op(lazy);
        model = std::move(step.result);
        ok = check_view(t, model, base.dtype);
      }
      if (ok) {
        SCOPED_TRACE(chain + " [lazy chain, read once at the end]");
        ok = check_view(lazy, model, base.dtype);
        if (ok) {
          auto r = matches(lazy + t, m_scale(model, 2.0), base.dtype, "lazy + view");
          if (!r) {
            ADD_FAILURE() << r.message();
            ok = false;
          }
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << chain << "\nthrew: " << e.what();
      ok = false;
    }
    if (!ok) ++failed_iterations;
  }
}

// The reference model itself, on a few hand-computed cases (so that a model bug cannot hide a
// kiln bug or invent one).
TEST(Views, ReferenceModelSanity) {
  Model a{{2, 3}, {0, 1, 2, 3, 4, 5}};
  EXPECT_EQ(m_permute(a, {1, 0}).values, (Vd{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(m_slice(Model{{5}, {0, 1, 2, 3, 4}}, {-1}, {-6}, {-1}).values, (Vd{4, 3, 2, 1, 0}));
  EXPECT_EQ(m_slice(Model{{5}, {0, 1, 2, 3, 4}}, {4}, {0}, {-2}).values, (Vd{4, 2}));
  EXPECT_EQ(m_pad(Model{{2}, {1, 2}}, {1}, {2}, 9).values, (Vd{9, 1, 2, 9, 9}));
  EXPECT_EQ(m_broadcast(Model{{2}, {1, 2}}, {2, 2}, false).values, (Vd{1, 2, 1, 2}));
  EXPECT_EQ(m_broadcast(Model{{2}, {1, 2}}, {2, 2}, true).values, (Vd{1, 1, 2, 2}));
  EXPECT_EQ(m_expand(Model{{2}, {1, 2}}, 1, 2).values, (Vd{1, 1, 2, 2}));
  EXPECT_EQ(m_repeat(Model{{2, 2}, {0, 1, 2, 3}}, {2, 3}).values,
            (Vd{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  EXPECT_EQ(m_extend(Model{{3}, {1, 2, 3}}, {7}, {1}, {2}).values, (Vd{0, 1, 0, 2, 0, 3, 0}));
  EXPECT_EQ(m_extend(Model{{3}, {1, 2, 3}}, {7}, {1}, {-2}).values, (Vd{0, 3, 0, 2, 0, 1, 0}));
}

// ---------------------------------------------------------------------------------------------
// Op names and laziness
// ---------------------------------------------------------------------------------------------

TEST(Views, OpNames) {
  Tensor x = Tensor::from(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(kiln::reshape(x, {3, 2}).op_name(), "reshape");
  EXPECT_EQ(x.reshape({6}).op_name(), "reshape");
  EXPECT_EQ(kiln::permute(x, {1, 0}).op_name(), "permute");
  EXPECT_EQ(x.permute({1, 0}).op_name(), "permute");
  EXPECT_EQ(kiln::slice(x, {0, 1}, {2, 3}).op_name(), "slice");
  EXPECT_EQ(kiln::slice(x, {1, -1}, {-3, -4}, {-1, -2}).op_name(), "slice");
  EXPECT_EQ(kiln::pad(x, {1, 0}, {0, 1}, 3.0).op_name(), "pad");
  EXPECT_EQ(kiln::broadcast_to(x, {4, 2, 3}).op_name(), "broadcast");
  EXPECT_EQ(kiln::broadcast_to(x, {2, 3, 4}, true).op_name(), "broadcast");
  EXPECT_EQ(kiln::contiguous(x).op_name(), "contiguous");
}

TEST(Views, ViewInputIsTheViewedNode) {
  Tensor x = Tensor::from(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  for (const Tensor& v : {kiln::reshape(x, {3, 2}), kiln::permute(x, {1, 0}),
                          kiln::slice(x, {0, 0}, {1, 3})}) {
    SCOPED_TRACE(std::string(v.op_name()));
    const auto in = v.inputs();
    ASSERT_EQ(in.size(), 1u);
    EXPECT_TRUE(in[0].same_node(x));
  }
  Tensor b = kiln::broadcast_to(x, {2, 2, 3});
  ASSERT_FALSE(b.inputs().empty());
  EXPECT_TRUE(b.inputs()[0].same_node(x));
  Tensor p = kiln::pad(x, {1, 1}, {1, 1});
  ASSERT_FALSE(p.inputs().empty());
  EXPECT_TRUE(p.inputs()[0].same_node(x));
}

TEST(Views, NotEvaluatedWhenBuilt) {
  Tensor a = Tensor::from(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor x = a * 10.0;  // computed, not evaluated
  ASSERT_FALSE(x.is_evaluated());
  std::vector<Tensor> views = {
      kiln::reshape(x, {3, 2}),
      kiln::permute(x, {1, 0}),
      kiln::slice(x, {1, -1}, {-3, -4}, {-1, -1}),
      kiln::pad(x, {1, 0}, {0, 2}, -1.0),
      kiln::broadcast_to(x, {2, 2, 3}),
      kiln::unsqueeze_expand(x, 1, 2),
      kiln::repeat(x, {2, 1}),
      kiln::extend(x, {4, 7}, {1, 0}, {2, -2}),
      kiln::squeeze(kiln::unsqueeze(x, 0)),
      kiln::reverse_dims(x),
      kiln::flatten(x),
      kiln::reshape(kiln::permute(kiln::slice(x, {0, 0}, {2, 2}), {1, 0}), {4}),
  };
  for (const Tensor& v : views) {
    EXPECT_FALSE(v.is_evaluated()) << v.op_name();
  }
  EXPECT_FALSE(x.is_evaluated());

  // Reading a view gives the right values; eval() keeps a result.
  Tensor v = views[2];  // rows reversed, columns 2..0
  EXPECT_EQ(v.shape(), (Shape{2, 3}));
  EXPECT_EQ(v.to_vector<double>(), (Vd{60, 50, 40, 30, 20, 10}));
  v.eval();
  EXPECT_TRUE(v.is_evaluated());
  EXPECT_EQ(v.to_vector<double>(), (Vd{60, 50, 40, 30, 20, 10}));
  // The last, composed view: slice [[10,20],[40,50]] -> permute -> flat.
  EXPECT_EQ(views.back().to_vector<double>(), (Vd{10, 40, 20, 50}));
  // Building another view of an evaluated view still does not evaluate it.
  Tensor w = kiln::permute(v, {1, 0});
  EXPECT_FALSE(w.is_evaluated());
  EXPECT_EQ(w.to_vector<double>(), (Vd{60, 30, 50, 20, 40, 10}));
}

// ---------------------------------------------------------------------------------------------
// Views of evaluated tensors; immutability
// ---------------------------------------------------------------------------------------------

TEST(Views, ViewOfViewOfEvaluatedTensor) {
  std::vector<double> data(24);
  for (int i = 0; i < 24; ++i) data[static_cast<std::size_t>(i)] = i;
  Tensor base = Tensor::from(data, {2, 3, 4}) * 1.0;
  base.eval();
  ASSERT_TRUE(base.is_evaluated());
  const Model mb{{2, 3, 4}, data};

  Tensor v1 = kiln::permute(base, {2, 0, 1});  // [4,2,3]
  Tensor v2 = kiln::slice(v1, {1, 0, -1}, {4, 2, -4}, {2, 1, -1});
  const Model m1 = m_permute(mb, {2, 0, 1});
  const Model m2 = m_slice(m1, {1, 0, -1}, {4, 2, -4}, {2, 1, -1});
  ASSERT_EQ(m2.shape, (Shape{2, 2, 3}));
  // v2[a][b][c] = base[b][2-c][1+2a]
  EXPECT_EQ(m2.values, (Vd{9, 5, 1, 21, 17, 13, 11, 7, 3, 23, 19, 15}));

  EXPECT_TRUE(matches(v2, m2, DType::f64, "v2"));
  v2.eval();
  EXPECT_TRUE(matches(v2, m2, DType::f64, "v2 after eval"));
  EXPECT_TRUE(matches(v2, m2, DType::f64, "v2 read again"));
  EXPECT_TRUE(matches(kiln::contiguous(v2), m2, DType::f64, "contiguous(v2)"));
  EXPECT_TRUE(matches(v1, m1, DType::f64, "v1"));
  // A third level on the evaluated view.
  Tensor v3 = kiln::reshape(v2, {4, 3});
  EXPECT_TRUE(matches(v3, m_reshape(m2, {4, 3}), DType::f64, "v3"));
  Tensor v4 = kiln::pad(kiln::reverse_dims(v3), {0, 1}, {1, 0}, -2.0);
  EXPECT_TRUE(matches(v4, m_pad(m_permute(m_reshape(m2, {4, 3}), {1, 0}), {0, 1}, {1, 0}, -2.0),
                      DType::f64, "v4"));
  // The input is unchanged by all of this.
  EXPECT_EQ(base.to_vector<double>(), data);
}

TEST(Views, EvaluatingAViewDoesNotChangeItsInput) {
  std::vector<double> data = {1, 2, 3, 4, 5, 6};
  Tensor x = Tensor::from(data, {2, 3});
  data[0] = 100;  // from() copied: the tensor does not see this
  const Vd original = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(x.to_vector<double>(), original);

  Tensor v = kiln::pad(kiln::slice(x, {-1, -1}, {-3, -4}, {-1, -1}), {1, 1}, {1, 1}, 8.0);
  Tensor e = kiln::extend(kiln::permute(x, {1, 0}), {5, 3}, {0, 1}, {2, -1});
  Tensor r = kiln::repeat(kiln::broadcast_to(x, {2, 2, 3}), {1, 2, 1});
  v.eval();
  e.eval();
  r.eval();
  EXPECT_EQ(v.to_vector<double>(),
            (Vd{8, 8, 8, 8, 8, 8, 6, 5, 4, 8, 8, 3, 2, 1, 8, 8, 8, 8, 8, 8}));
  EXPECT_EQ(e.to_vector<double>(), (Vd{0, 4, 1, 0, 0, 0, 0, 5, 2, 0, 0, 0, 0, 6, 3}));
  EXPECT_EQ(r.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(x.to_vector<double>(), original);
  EXPECT_TRUE(x.is_evaluated());

  // A computed node used by a view and, later, by another op: each keeps its own values.
  Tensor y = x + 1.0;
  Tensor yv = kiln::slice(y, {0, 0}, {1, 3});
  EXPECT_EQ(yv.to_vector<double>(), (Vd{2, 3, 4}));
  Tensor z = y * 3.0;
  z.eval();
  EXPECT_EQ(z.to_vector<double>(), (Vd{6, 9, 12, 15, 18, 21}));
  EXPECT_EQ(yv.to_vector<double>(), (Vd{2, 3, 4}));
  EXPECT_EQ(y.to_vector<double>(), (Vd{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(x.to_vector<double>(), original);

  // Elementwise ops on views read the view, not the underlying layout.
  Tensor t = kiln::reverse_dims(x);
  Tensor s = t + kiln::reshape(x, {3, 2});  // [[1,4],[2,5],[3,6]] + [[1,2],[3,4],[5,6]]
  EXPECT_EQ(s.to_vector<double>(), (Vd{2, 6, 5, 9, 8, 12}));
  EXPECT_EQ(x.to_vector<double>(), original);
}

// ---------------------------------------------------------------------------------------------
// Integer types through views keep exact values
// ---------------------------------------------------------------------------------------------

TEST(Views, Int32ExactThroughViews) {
  using I = std::int32_t;
  const I lo = std::numeric_limits<I>::min(), hi = std::numeric_limits<I>::max();
  Tensor x = Tensor::from(std::vector<I>{lo, -1, 0, 1, hi, 123456789}, {2, 3});
  ASSERT_EQ(x.dtype(), DType::i32);

  Tensor p = kiln::permute(x, {1, 0});
  EXPECT_EQ(p.dtype(), DType::i32);
  EXPECT_EQ(p.to_vector<I>(), (std::vector<I>{lo, 1, -1, hi, 0, 123456789}));

  Tensor s = kiln::slice(x, {-1, -1}, {-3, -4}, {-1, -2});
  EXPECT_EQ(s.dtype(), DType::i32);
  EXPECT_EQ(s.to_vector<I>(), (std::vector<I>{123456789, 1, 0, lo}));

  Tensor pd = kiln::pad(kiln::reshape(x, {6}), {1}, {2}, -7);
  EXPECT_EQ(pd.dtype(), DType::i32);
  EXPECT_EQ(pd.to_vector<I>(), (std::vector<I>{-7, lo, -1, 0, 1, hi, 123456789, -7, -7}));

  Tensor e = kiln::extend(kiln::slice(x, {0, 0}, {1, 3}), {1, 6}, {0, 1}, {1, -2});
  EXPECT_EQ(e.dtype(), DType::i32);
  EXPECT_EQ(e.to_vector<I>(), (std::vector<I>{0, 0, 0, -1, 0, lo}));

  Tensor r = kiln::repeat(kiln::slice(x, {1, 1}, {2, 3}), {2, 2});
  EXPECT_EQ(r.dtype(), DType::i32);
  EXPECT_EQ(r.to_vector<I>(),
            (std::vector<I>{hi, 123456789, hi, 123456789, hi, 123456789, hi, 123456789}));

  Tensor b =
      kiln::unsqueeze_expand(kiln::broadcast_to(kiln::slice(x, {0, 0}, {1, 2}), {2, 1, 2}), 1, 2);
  EXPECT_EQ(b.dtype(), DType::i32);
  EXPECT_EQ(b.shape(), (Shape{2, 2, 1, 2}));
  EXPECT_EQ(b.to_vector<I>(), (std::vector<I>{lo, -1, lo, -1, lo, -1, lo, -1}));

  Tensor c = kiln::contiguous(kiln::reverse_dims(x));
  EXPECT_EQ(c.dtype(), DType::i32);
  EXPECT_EQ(c.to_vector<I>(), (std::vector<I>{lo, 1, -1, hi, 0, 123456789}));
}

TEST(Views, Int64ExactThroughViews) {
  using L = std::int64_t;
  const L lo = std::numeric_limits<L>::min(), hi = std::numeric_limits<L>::max();
  const L big = (L{1} << 53) + 1;  // not representable as a double
  Tensor x = Tensor::from(std::vector<L>{lo, big, -big, hi, 0, big + 2}, {3, 2});
  ASSERT_EQ(x.dtype(), DType::i64);

  Tensor t = kiln::reverse_dims(x);  // [[lo,-big,0],[big,hi,big+2]]
  EXPECT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.to_vector<L>(), (std::vector<L>{lo, -big, 0, big, hi, big + 2}));

  Tensor s = kiln::slice(t, {1, -1}, {2, -4}, {1, -1});
  EXPECT_EQ(s.to_vector<L>(), (std::vector<L>{big + 2, hi, big}));

  Tensor pd = kiln::pad(s, {1, 0}, {0, 1}, kiln::Scalar(static_cast<long>(big + 4)));
  EXPECT_EQ(pd.dtype(), DType::i64);
  EXPECT_EQ(pd.shape(), (Shape{2, 4}));
  EXPECT_EQ(pd.to_vector<L>(),
            (std::vector<L>{big + 4, big + 4, big + 4, big + 4, big + 2, hi, big, big + 4}));

  Tensor e = kiln::extend(kiln::reshape(x, {6}), {12}, {1}, {-2});
  EXPECT_EQ(e.dtype(), DType::i64);
  EXPECT_EQ(e.to_vector<L>(),
            (std::vector<L>{0, big + 2, 0, 0, 0, hi, 0, -big, 0, big, 0, lo}));

  Tensor r = kiln::repeat(kiln::slice(x, {0, 1}, {2, 2}), {1, 3});  // [[big],[hi]] x3
  EXPECT_EQ(r.to_vector<L>(), (std::vector<L>{big, big, big, hi, hi, hi}));

  Tensor bc = kiln::broadcast_to(kiln::squeeze(kiln::slice(x, {2, 0}, {3, 2})), {2, 2});
  EXPECT_EQ(bc.dtype(), DType::i64);
  EXPECT_EQ(bc.to_vector<L>(), (std::vector<L>{0, big + 2, 0, big + 2}));

  Tensor cat = kiln::concat(kiln::slice(x, {0, 0}, {1, 2}), kiln::slice(x, {-1, 0}, {-4, 2}, {-2, 1}), 0);
  EXPECT_EQ(cat.dtype(), DType::i64);
  EXPECT_EQ(cat.to_vector<L>(), (std::vector<L>{lo, big, 0, big + 2, lo, big}));

  // Integer arithmetic on views stays exact: -big + (big + 2) is 2 (in doubles it would be 4).
  Tensor sum = kiln::slice(x, {1, 0}, {2, 1}) + kiln::slice(x, {2, 1}, {3, 2});
  EXPECT_EQ(sum.dtype(), DType::i64);
  EXPECT_EQ(sum.shape(), (Shape{1, 1}));
  EXPECT_EQ(sum.to_vector<L>(), (std::vector<L>{2}));
}

}  // namespace
