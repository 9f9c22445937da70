// A strict JSON reader for the headers of file formats (safetensors): objects, arrays, strings,
// numbers, true, false and null, nested at most `max_depth` deep. Malformed text is reported
// with its byte position; nothing in the input can make it crash, recurse without bound or
// hold more than one value per four bytes of text (real headers have one per seven or more).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

struct Json {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  // A number: its value as a double, and exactly when it is an integer that fits in 64 bits.
  double number = 0;
  bool is_integer = false;
  std::int64_t integer = 0;
  std::string string;
  std::vector<Json> array;
  struct Member;
  std::vector<Member> object;  // in the order of the text

  // The member named `key`, or null.
  const Json* find(std::string_view key) const;
};

struct Json::Member {
  std::string key;
  Json value;
};

// Why a text is not JSON; what() gives the reason and the byte position.
class JsonError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses `text` as one JSON value (whitespace around it allowed). Duplicate keys in an object
// are an error: a format that names things by key must not have two meanings for one name.
Json parse_json(std::string_view text, int max_depth = 32);

// `s` as a JSON string literal (quotes and escapes).
std::string json_quote(std::string_view s);

}  // namespace kiln::detail
