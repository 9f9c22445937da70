// einsum for one or two operands, lowered to primitive ops: an index repeated within an operand
// becomes a diagonal (a masked sum), indices no one else needs are summed away, and two operands
// meet in one batched matmul: [batch, left, contracted] x [batch, contracted, right].
#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include "api/builder.hpp"
#include "api/composite_support.hpp"
#include "kiln/composite_ops.hpp"
#include "kiln/ops.hpp"

namespace kiln {

namespace {

constexpr std::string_view kOp = "einsum";

[[noreturn]] void malformed(const std::string& equation, const std::string& why) {
  detail::fail(ErrorCode::invalid_select, kOp, "equation \"" + equation + "\": " + why);
}

// An operand together with the index letter of each of its dimensions.
struct Labelled {
  Tensor t;
  std::string letters;
};

// `t` (labelled `from`) with its dimensions reordered to `to` (the same letters).
Tensor reorder(const Tensor& t, const std::string& from, const std::string& to) {
  if (from == to) return t;
  std::vector<int> perm;
  for (char c : to) perm.push_back(static_cast<int>(from.find(c)));
  return permute(t, perm);
}

// Replaces each letter that appears twice in one operand by its diagonal, until all are distinct.
Labelled take_diagonals(Labelled x) {
  for (;;) {
    std::size_t first = std::string::npos, second = std::string::npos;
    for (std::size_t i = 0; i < x.letters.size() && second == std::string::npos; ++i) {
      const std::size_t j = x.letters.find(x.letters[i], i + 1);
      if (j != std::string::npos) first = i, second = j;
    }
    if (second == std::string::npos) return x;
    const char c = x.letters[first];
    std::string rest;
    std::vector<int> perm;
    for (std::size_t i = 0; i < x.letters.size(); ++i)
      if (i != first && i != second) {
        rest += x.letters[i];
        perm.push_back(static_cast<int>(i));
      }
    perm.push_back(static_cast<int>(first));
    perm.push_back(static_cast<int>(second));
    // The pair moved to the end, everything off its diagonal set to 0 and summed away. A select
    // rather than a product with the identity, so that an infinity off the diagonal is no NaN.
    const Tensor moved = permute(x.t, perm);
    const std::int64_t n = moved.shape().back();
    const Tensor on_diagonal = detail::broadcast_as(
        equal(arange({n, n}, 0), arange({n, n}, 1)), moved.shape());
    x.t = sum(where(on_diagonal, moved, zeros({}, moved.dtype())), {-1});
    x.letters = rest + c;
  }
}

// Sums away the letters of `x` that `keep` does not hold.
Labelled sum_unneeded(Labelled x, const std::string& keep) {
  std::vector<int> axes;
  std::string rest;
  for (std::size_t i = 0; i < x.letters.size(); ++i) {
    if (keep.find(x.letters[i]) == std::string::npos) axes.push_back(static_cast<int>(i));
    else rest += x.letters[i];
  }
  if (axes.empty()) return x;
  return {sum(x.t, axes), rest};
}

std::int64_t product(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  for (const Tensor& t : operands) detail::node_of(t, kOp);
  if (operands.empty() || operands.size() > 2)
    detail::fail(ErrorCode::illegal_dimensionality, kOp,
                 "supports one or two operands, got " + std::to_string(operands.size()));

  // ---- parse ------------------------------------------------------------------------------------
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const std::size_t arrow = eq.find("->");
  const bool explicit_output = arrow != std::string::npos;
  const std::string lhs = explicit_output ? eq.substr(0, arrow) : eq;
  const std::string rhs = explicit_output ? eq.substr(arrow + 2) : "";
  // A term is letters with at most one "..." among them.
  struct Term {
    std::string before, after;
    bool ellipsis = false;
  };
  auto parse_term = [&](const std::string& text, const char* where) {
    Term t;
    const std::size_t dots = text.find("...");
    t.ellipsis = dots != std::string::npos;
    t.before = t.ellipsis ? text.substr(0, dots) : text;
    t.after = t.ellipsis ? text.substr(dots + 3) : "";
    for (const std::string* part : {&t.before, &t.after})
      for (char c : *part)
        if (!std::isalpha(static_cast<unsigned char>(c)))
          malformed(equation, std::string("unexpected character '") + c + "' in " + where +
                                  (c == '.' ? " (\"...\" at most once per term)" : ""));
    return t;
  };
  std::vector<std::string> raw(1);
  for (char c : lhs) {
    if (c == ',') raw.emplace_back();
    else raw.back() += c;
  }
  if (raw.size() != operands.size())
    malformed(equation, std::to_string(raw.size()) + " operand terms for " +
                            std::to_string(operands.size()) + " operands");

  // "..." stands for the dimensions no letter names, aligned at the right across operands. They
  // get internal labels char(1 + j), j counted from the left of the widest "...": no letter, and
  // sorted before every letter (the implicit output puts them first, as libtorch).
  std::vector<Term> parsed;
  std::vector<int> covered;
  int widest = 0;
  for (std::size_t k = 0; k < raw.size(); ++k) {
    parsed.push_back(parse_term(raw[k], "an operand term"));
    const Term& t = parsed.back();
    const auto letters = static_cast<int>(t.before.size() + t.after.size());
    const int rank = operands[k].rank();
    if (t.ellipsis ? letters > rank : letters != rank)
      malformed(equation, "term \"" + raw[k] + "\" has " + std::to_string(letters) +
                              " indices for operand " + std::to_string(k) + " of shape " +
                              shape_to_string(operands[k].shape()));
    covered.push_back(t.ellipsis ? rank - letters : 0);
    widest = std::max(widest, covered.back());
  }
  constexpr int kMaxEllipsis = 64;  // labels 1..64 are below every letter
  if (widest > kMaxEllipsis)
    malformed(equation, "\"...\" covers more than " + std::to_string(kMaxEllipsis) + " dimensions");
  auto ellipsis_labels = [&](int count) {
    std::string labels;
    for (int j = widest - count; j < widest; ++j) labels += static_cast<char>(1 + j);
    return labels;
  };
  std::vector<std::string> terms;
  for (std::size_t k = 0; k < parsed.size(); ++k)
    terms.push_back(parsed[k].before + ellipsis_labels(covered[k]) + parsed[k].after);
  auto label_name = [](char c) {
    return std::isalpha(static_cast<unsigned char>(c))
               ? "index '" + std::string(1, c) + "'"
               : "dimension " + std::to_string(c - 1) + " of \"...\"";
  };

  // The size of each label. Across operands sizes broadcast (equal, or 1 in some operand);
  // within one operand a repeated letter's sizes must be equal (it is a diagonal).
  std::map<char, std::int64_t> size;
  std::map<char, int> count;
  auto size_error = [&](char c, std::int64_t a, std::int64_t b) {
    detail::fail(ErrorCode::incompatible_shapes, kOp,
                 "equation \"" + equation + "\": " + label_name(c) + " has sizes " +
                     std::to_string(a) + " and " + std::to_string(b));
  };
  for (std::size_t k = 0; k < terms.size(); ++k) {
    const Shape& s = operands[k].shape();
    std::map<char, std::int64_t> own;
    for (std::size_t d = 0; d < s.size(); ++d) {
      const char c = terms[k][d];
      ++count[c];
      const auto [mine, first_here] = own.emplace(c, s[d]);
      if (!first_here && mine->second != s[d]) size_error(c, mine->second, s[d]);
      const auto [it, added] = size.emplace(c, s[d]);
      if (added || it->second == s[d] || s[d] == 1) continue;
      if (it->second != 1) size_error(c, it->second, s[d]);
      it->second = s[d];
    }
  }
  // Every operand broadcast to the full size of its labels (a view).
  std::vector<Tensor> full;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    Shape s;
    for (char c : terms[k]) s.push_back(size.at(c));
    full.push_back(detail::broadcast_as(operands[k], s));
  }
  std::string out;
  if (explicit_output) {
    // Without "..." in the output, the dimensions under the operands' "..." are summed.
    const Term t = parse_term(rhs, "the output");
    const std::string wanted = t.before + (t.ellipsis ? ellipsis_labels(widest) : "") + t.after;
    for (char c : wanted) {
      if (size.find(c) == size.end())
        malformed(equation, "output " + label_name(c) + " is in no operand");
      if (out.find(c) != std::string::npos)
        malformed(equation, "output " + label_name(c) + " appears twice");
      out += c;
    }
  } else {
    // Implicit: the "..." dimensions, then the letters that appear exactly once, in alphabetical
    // (ASCII) order.
    out = ellipsis_labels(widest);
    for (const auto& [c, n] : count)
      if (n == 1 && std::isalpha(static_cast<unsigned char>(c))) out += c;
  }

  // ---- one operand ------------------------------------------------------------------------------
  if (operands.size() == 1) {
    Labelled x = sum_unneeded(take_diagonals({full[0], terms[0]}), out);
    return reorder(x.t, x.letters, out);
  }

  // ---- two operands -----------------------------------------------------------------------------
  Labelled a = take_diagonals({full[0], terms[0]});
  Labelled b = take_diagonals({full[1], terms[1]});
  a = sum_unneeded(a, out + b.letters);
  b = sum_unneeded(b, out + a.letters);
  std::string batch, left, contracted, right;
  for (char c : a.letters) {
    const bool in_b = b.letters.find(c) != std::string::npos;
    const bool in_out = out.find(c) != std::string::npos;
    (in_b ? (in_out ? batch : contracted) : left) += c;
  }
  for (char c : b.letters)
    if (a.letters.find(c) == std::string::npos) right += c;
  auto sizes_of = [&](const std::string& letters) {
    Shape s;
    for (char c : letters) s.push_back(size.at(c));
    return s;
  };
  const Shape sb = sizes_of(batch), sl = sizes_of(left), sc = sizes_of(contracted),
              sr = sizes_of(right);
  const Tensor am = reshape(reorder(a.t, a.letters, batch + left + contracted),
                            {product(sb), product(sl), product(sc)});
  const Tensor bm = reshape(reorder(b.t, b.letters, batch + contracted + right),
                            {product(sb), product(sc), product(sr)});
  Shape result_shape = sb;
  result_shape.insert(result_shape.end(), sl.begin(), sl.end());
  result_shape.insert(result_shape.end(), sr.begin(), sr.end());
  const Tensor r = reshape(matmul(am, bm), result_shape);
  return reorder(r, batch + left + right, out);
}

}  // namespace kiln
