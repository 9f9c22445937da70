// Checks that an installed kiln can be found, linked and run by a separate project.
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <vector>

int main() {
  try {
    auto a = kiln::tensor({{1.f, 2.f}, {3.f, 4.f}});
    auto b = kiln::matmul(a, a) + 1.0f;
    std::cout << kiln::graph_to_string(b) << '\n' << b << '\n';

    if (b.dtype() != kiln::DType::f32 || b.shape() != kiln::Shape{2, 2}) {
      std::cerr << "consumer: unexpected result type or shape\n";
      return 1;
    }
    const std::vector<float> expected{8.f, 11.f, 16.f, 23.f};
    const std::vector<float> got = b.to_vector<float>();
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (std::fabs(got[i] - expected[i]) > 1e-5f) {
        std::cerr << "consumer: element " << i << " is " << got[i] << ", expected "
                  << expected[i] << '\n';
        return 1;
      }
    }
  } catch (const kiln::Error& e) {
    std::cerr << "consumer: kiln::Error (" << kiln::error_code_name(e.code()) << "): " << e.what()
              << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "consumer: " << e.what() << '\n';
    return 1;
  }
  std::cout << "consumer: OK\n";
  return 0;
}
