// Numeric CSV files (kiln/data.hpp).
#include <charconv>
#include <cmath>
#include <limits>

#include "data/whole_files.hpp"
#include "kiln/data.hpp"
#include "kiln/error.hpp"

namespace kiln::data {

namespace {

struct Row {
  std::vector<std::string> fields;
  std::size_t line;  // 1-based, where the row begins
};

// Splits `text` into rows of fields; quoted fields may hold delimiters, quotes ("") and line ends.
std::vector<Row> rows_of(std::string_view text, char delimiter, const std::string& source) {
  std::vector<Row> rows;
  std::size_t line = 1, i = 0;
  while (i < text.size()) {
    Row row{{}, line};
    std::string field;
    bool quoted = false, was_quoted = false;
    for (;; ++i) {
      if (i == text.size()) {
        if (quoted)
          throw Error(ErrorCode::io_error, "load_csv: " + source + ": line " +
                                               std::to_string(row.line) +
                                               ": a quoted field is not closed");
        break;
      }
      const char c = text[i];
      if (quoted) {
        if (c == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            ++i;
          } else {
            quoted = false;
          }
        } else {
          if (c == '\n') ++line;
          field += c;
        }
      } else if (c == '"' && field.empty() && !was_quoted) {
        quoted = was_quoted = true;
      } else if (c == delimiter) {
        row.fields.push_back(std::move(field));
        field.clear();
        was_quoted = false;
      } else if (c == '\n' || c == '\r') {
        if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
        ++line;
        ++i;
        break;
      } else {
        field += c;
      }
    }
    row.fields.push_back(std::move(field));
    const bool blank = row.fields.size() == 1 && row.fields[0].empty() && !was_quoted;
    if (!blank) rows.push_back(std::move(row));
  }
  return rows;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The field as a T, or false.
template <class T>
bool number(std::string_view field, T& out) {
  std::string_view s = trimmed(field);
  if constexpr (std::is_floating_point_v<T>) {
    if (s.empty()) {
      out = std::numeric_limits<T>::quiet_NaN();
      return true;
    }
  }
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), out);
  return error == std::errc() && end == s.data() + s.size() && !s.empty();
}

bool is_number(std::string_view field) {
  double v;
  return !trimmed(field).empty() && number(field, v);
}

}  // namespace

CsvTable parse_csv(std::string_view text, const CsvOptions& options, const std::string& source) {
  if (options.dtype != DType::f32 && options.dtype != DType::f64 && options.dtype != DType::i32 &&
      options.dtype != DType::i64)
    throw Error(ErrorCode::wrong_type, "load_csv: values of " +
                                           std::string(dtype_name(options.dtype)) +
                                           " (f32, f64, i32 or i64)");
  if (options.delimiter == '"' || options.delimiter == '\n' || options.delimiter == '\r')
    throw Error(ErrorCode::invalid_select, "load_csv: the delimiter cannot be a quote or line end");
  std::vector<Row> rows = rows_of(text, options.delimiter, source);
  CsvTable table;
  bool header = options.header == CsvOptions::Header::present;
  if (options.header == CsvOptions::Header::automatic && !rows.empty())
    for (const std::string& f : rows.front().fields)
      if (!is_number(f)) header = true;
  std::size_t first = 0;
  if (header) {
    if (rows.empty()) throw Error(ErrorCode::io_error, "load_csv: " + source + ": no header row");
    for (const std::string& f : rows.front().fields) table.columns.emplace_back(trimmed(f));
    first = 1;
  }
  const std::size_t width = header         ? table.columns.size()
                            : rows.empty() ? 0
                                           : rows.front().fields.size();
  if (!header)
    for (std::size_t c = 0; c < width; ++c) table.columns.push_back(std::to_string(c));
  const std::size_t count = rows.size() - first;
  auto fill = [&]<class T>() {
    std::vector<T> values;
    values.reserve(count * width);
    for (std::size_t r = first; r < rows.size(); ++r) {
      const Row& row = rows[r];
      if (row.fields.size() != width)
        throw Error(ErrorCode::io_error,
                    "load_csv: " + source + ": line " + std::to_string(row.line) + " has " +
                        std::to_string(row.fields.size()) + " fields, " +
                        (header ? "the header" : "the first row") + " " + std::to_string(width));
      for (std::size_t c = 0; c < width; ++c) {
        T v{};
        if (!number(row.fields[c], v))
          throw Error(ErrorCode::io_error,
                      "load_csv: " + source + ": line " + std::to_string(row.line) + ", column " +
                          std::to_string(c + 1) + " ('" + table.columns[c] + "'): '" +
                          row.fields[c] + "' is not " +
                          (std::is_floating_point_v<T> ? "a number" : "an integer") + " of " +
                          dtype_name(options.dtype));
        values.push_back(v);
      }
    }
    table.values =
        Tensor::from(values, {static_cast<std::int64_t>(count), static_cast<std::int64_t>(width)});
  };
  switch (options.dtype) {
    case DType::f32: fill.operator()<float>(); break;
    case DType::f64: fill.operator()<double>(); break;
    case DType::i32: fill.operator()<std::int32_t>(); break;
    default: fill.operator()<std::int64_t>(); break;
  }
  return table;
}

CsvTable load_csv(const std::string& path, const CsvOptions& options) {
  const std::vector<char> bytes = detail::read_whole_file(path, "load_csv");
  return parse_csv(std::string_view(bytes.data(), bytes.size()), options, path);
}

}  // namespace kiln::data
