#include "graph/values.hpp"

#include <string>

#include "kiln/error.hpp"

namespace kiln::detail {

std::shared_ptr<Buffer> host_buffer(const Node& n) {
  if (!n.result)
    throw Error(ErrorCode::internal_error,
                std::string("values of ") + std::string(n.info().name) + " " +
                    shape_to_string(n.shape) + " were read before it was evaluated");
  return n.result;
}

const Buffer& host_values(const Node& n) {
  if (!n.result)
    throw Error(ErrorCode::internal_error,
                std::string("values of ") + std::string(n.info().name) + " " +
                    shape_to_string(n.shape) + " were read before it was evaluated");
  return *n.result;
}

void set_host_values(Node& n, std::shared_ptr<Buffer> values) { n.result = std::move(values); }

}  // namespace kiln::detail
