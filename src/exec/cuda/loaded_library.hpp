// NVIDIA's libraries as the CUDA backend uses them: loaded at run time (dlopen), so that libkiln
// loads on machines without them and the backend can say which one is missing.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace kiln::detail::cuda {

// The first of `names` that loads, or null.
inline void* open_library(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return library;
  return nullptr;
}

// Sets `into` to the library's `symbol`; false, naming the symbol in `missing`, where it has none.
template <class F>
bool resolve(void* library, const char* symbol, F& into, std::string& missing) {
  into = reinterpret_cast<F>(dlsym(library, symbol));
  if (into == nullptr) missing = std::string("the loaded library has no ") + symbol;
  return into != nullptr;
}

}  // namespace kiln::detail::cuda
