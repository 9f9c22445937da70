// NumPy .npz archives (kiln/data.hpp): ZIP archives (data/zip_archive) of .npy files.
#include <unordered_set>

#include "data/whole_files.hpp"
#include "data/zip_archive.hpp"
#include "kiln/data.hpp"
#include "kiln/error.hpp"

namespace kiln::data {

std::vector<std::pair<std::string, Tensor>> parse_npz(std::span<const std::byte> bytes,
                                                      const std::string& source) {
  std::vector<std::pair<std::string, Tensor>> arrays;
  std::unordered_set<std::string> keys;
  for (const detail::ZipEntry& e : detail::read_zip(bytes, source)) {
    const std::string suffix = ".npy";
    if (e.name.size() <= suffix.size() ||
        e.name.compare(e.name.size() - suffix.size(), suffix.size(), suffix) != 0)
      throw Error(ErrorCode::io_error,
                  "load_npz: " + source + ": entry '" + e.name + "' is not an .npy file");
    std::string key = e.name.substr(0, e.name.size() - suffix.size());
    if (!keys.insert(key).second)
      throw Error(ErrorCode::io_error,
                  "load_npz: " + source + ": the key '" + key + "' is in the archive twice");
    arrays.emplace_back(std::move(key), parse_npy(e.data, source + ", entry '" + e.name + "'"));
  }
  return arrays;
}

std::vector<std::pair<std::string, Tensor>> load_npz(const std::string& path) {
  const std::vector<char> bytes = detail::read_whole_file(path, "load_npz");
  return parse_npz(std::as_bytes(std::span(bytes)), path);
}

void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays,
              bool compressed) {
  std::vector<detail::ZipEntry> entries;
  std::unordered_set<std::string> keys;
  for (const auto& [key, t] : arrays) {
    if (key.empty() || !keys.insert(key).second)
      throw Error(ErrorCode::invalid_select,
                  "save_npz: the key '" + key + "' is " + (key.empty() ? "empty" : "given twice"));
    entries.push_back({key + ".npy", serialize_npy(t)});
  }
  const std::vector<std::byte> archive = detail::write_zip(entries, compressed);
  detail::write_file_atomically(
      path, {reinterpret_cast<const char*>(archive.data()), archive.size()}, "save_npz");
}

}  // namespace kiln::data
