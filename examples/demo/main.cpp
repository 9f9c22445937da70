// kiln demo: builds a small lazy graph, prints it, then evaluates it.
#include <kiln/kiln.hpp>

#include <iostream>

int main() {
  using kiln::DType;

  try {
    // Nothing is computed while the graph is built.
    auto x = kiln::tensor({{1.f, -2.f, 3.f}, {-4.f, 5.f, -6.f}});  // f32 [2,3]
    auto w = kiln::uniform({3, 2}, /*seed=*/42, DType::f32);         // f32 [3,2] in [0, 1)
    auto y = kiln::relu(kiln::matmul(x, w) + 0.5f);                  // f32 [2,2]
    y.set_name("y");
    auto s = kiln::sum(y);  // 0-d
    s.set_name("s");

    std::cout << "graph of s:\n" << kiln::graph_to_string(s) << "\n";
    std::cout << "evaluated: " << (s.is_evaluated() ? "yes" : "no") << "\n\n";

    // Reading a value evaluates what it needs with the current executor.
    std::cout << "executor: " << kiln::current_executor()->name() << "\n";
    std::cout << "x = " << x << "\n";
    std::cout << "w = " << w << "\n";
    std::cout << "y = " << y << "\n";
    std::cout << "s = " << s << "\n";
    std::cout << "s.item<float>() = " << s.item<float>() << "\n\n";

    // Views copy nothing; a scalar is weak: it takes the tensor's type, as in libtorch.
    auto xt = x.t();                                              // f32 [3,2], a view of x
    auto z = xt * 2.0;                                            // f32 * double -> f32
    std::cout << "x^T * 2.0 = " << z << "\n";

    // Inverse broadcasting aligns shapes at the left: [2,3] + [2] adds one value per row.
    auto row_bias = kiln::tensor({10.f, 20.f});
    std::cout << "x + row_bias (inverse) = " << (x + row_bias.inverse_broadcast()) << "\n\n";

    // Shape errors are thrown while the graph is built, as kiln::Error with a code.
    try {
      auto bad = kiln::matmul(x, x);  // [2,3] x [2,3]
      (void)bad;
    } catch (const kiln::Error& e) {
      std::cout << "error (" << kiln::error_code_name(e.code()) << "): " << e.what() << "\n";
    }
  } catch (const kiln::Error& e) {
    std::cerr << "kiln error (" << kiln::error_code_name(e.code()) << "): " << e.what() << "\n";
    return 1;
  }
  return 0;
}
