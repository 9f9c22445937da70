// debug_print (Theano's debugprint) and to_dot (Graphviz): the tree's lines, indentation, flags
// and shared nodes; long chains in linear space; the DOT text's nodes, edges and schedule
// clusters, and that Graphviz's dot accepts it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "kiln/kiln.hpp"

namespace {

using kiln::Tensor;
using Vf = std::vector<float>;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(DebugPrint, ATreeWithSharedNodesPrintedOnce) {
  Tensor x = Tensor::from(Vf{1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  x.set_name("x");
  Tensor y = kiln::exp(x) + x;
  y.set_name("y");
  const auto lines = lines_of(kiln::debug_print(y));
  ASSERT_EQ(lines.size(), 4u) << kiln::debug_print(y);
  EXPECT_EQ(lines[0], "%0 add f32[2,3] \"y\"");
  EXPECT_EQ(lines[1], " |%1 exp f32[2,3]");
  EXPECT_EQ(lines[2], " | |%2 store f32[2,3] \"x\" data");
  EXPECT_EQ(lines[3], " |%2 (above)");
}

TEST(DebugPrint, FlagsViewsComputedAndWatchedNodes) {
  const Tensor x = Tensor::from(Vf{1.f, 2.f, 3.f, 4.f}, {2, 2});
  Tensor t;
  Tensor z;
  {
    kiln::GradientContext ctx;
    x.watch();
    t = kiln::transpose(x, 0, 1);
    z = kiln::sin(t);
  }
  z.eval();  // built for gradients, so it keeps its inputs once computed
  const std::string s = kiln::debug_print(z);
  const auto lines = lines_of(s);
  ASSERT_EQ(lines.size(), 3u) << s;
  EXPECT_NE(lines[0].find("sin f32[2,2] computed"), std::string::npos) << s;
  EXPECT_NE(lines[1].find("permute f32[2,2] view"), std::string::npos) << s;
  EXPECT_NE(lines[2].find("store f32[2,2] data watched"), std::string::npos) << s;
}

TEST(DebugPrint, SeveralRootsShareTheirNodes) {
  const Tensor x = Tensor::from(Vf{1.f, 2.f});
  const Tensor e = kiln::exp(x);
  const std::string s = kiln::debug_print(std::vector<Tensor>{e + 1.0f, e * 2.0f});
  EXPECT_EQ(count_of(s, "exp f32[2]"), 1u) << s;
  EXPECT_EQ(count_of(s, "(above)"), 1u) << s;
}

TEST(DebugPrint, ALongChainPrintsInLinearSpace) {
  Tensor x = Tensor::from(Vf{1.f});
  kiln::GradientContext ctx;  // keeps the chain whole (no evaluation as it grows)
  for (int i = 0; i < 2000; ++i) x = x + 1.0f;
  const std::string s = kiln::debug_print(x);
  // Every add has a scalar operand besides the chain: about two lines per step.
  EXPECT_GE(lines_of(s).size(), 2001u);
  EXPECT_LT(s.size(), 2000u * 2 * 200);
  EXPECT_NE(s.find("[depth 1999] "), std::string::npos);
}

TEST(ToDot, NodesEdgesAndClusters) {
  const Tensor a = Tensor::from(Vf{1.f, 2.f, 3.f, 4.f}, {2, 2});
  const Tensor b = Tensor::from(Vf{5.f, 6.f, 7.f, 8.f}, {2, 2});
  const Tensor y = kiln::exp(kiln::sin(a) * b).sum({1}) + kiln::transpose(a, 0, 1).sum({0});
  const std::string plain = kiln::to_dot(y);
  EXPECT_EQ(plain.rfind("digraph kiln {", 0), 0u);
  EXPECT_EQ(count_of(plain, "cluster_"), 0u);
  EXPECT_EQ(count_of(plain, "[style=dashed]"), 1u) << plain;  // into the transpose
  const std::size_t nodes = kiln::topological_order(y).size();
  EXPECT_EQ(count_of(plain, "[label="), nodes) << plain;
  std::size_t edges = 0;
  for (const Tensor& t : kiln::topological_order(y)) edges += t.inputs().size();
  EXPECT_EQ(count_of(plain, " -> "), edges) << plain;

  // The schedule: sin, mul and exp fused into the first sum (one reduce kernel), the transposed
  // sum its own, then the add.
  const std::string scheduled = kiln::to_dot(y, {.schedule = true});
  EXPECT_EQ(count_of(scheduled, "subgraph cluster_"), 3u) << scheduled;
  EXPECT_NE(scheduled.find("(reduce)"), std::string::npos) << scheduled;
  EXPECT_NE(scheduled.find("(elementwise)"), std::string::npos) << scheduled;
}

TEST(ToDot, NamesAreEscaped) {
  Tensor x = Tensor::from(Vf{1.f});
  x.set_name("a \"quoted\\\" name");
  const std::string s = kiln::to_dot(x);
  EXPECT_NE(s.find("\\\"quoted\\\\\\\" name"), std::string::npos) << s;
}

TEST(ToDot, GraphvizAcceptsIt) {
  if (std::system("command -v dot > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "Graphviz's dot is not installed (scripts/setup.sh installs it)";
  const Tensor a = Tensor::from(Vf{1.f, 2.f, 3.f, 4.f}, {2, 2});
  Tensor named = kiln::exp(a);
  named.set_name("odd \"name\" \\ here");
  const Tensor y = kiln::matmul(named, kiln::transpose(a, 0, 1)) + 1.0f;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kiln_dot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto dot_file = dir / "graph.dot";
  const auto svg_file = dir / "graph.svg";
  std::ofstream(dot_file) << kiln::to_dot(y, {.schedule = true});
  const std::string command =
      "dot -Tsvg '" + dot_file.string() + "' -o '" + svg_file.string() + "' 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0);
  EXPECT_GT(std::filesystem::file_size(svg_file), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
