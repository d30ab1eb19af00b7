#include "util/dynlib.h"

#include <dlfcn.h>

#include "util/error.h"

namespace repoctx {

DynLib::DynLib(const std::vector<std::string>& names, const std::string& hint) {
  std::string tried;
  for (const auto& n : names) {
    handle_ = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      name_ = n;
      return;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + n + ": " + (why ? why : "not found");
  }
  throw Error(ExitCode::failure, "cannot load a shared library (" + tried + "); " + hint);
}

DynLib::~DynLib() {
  // Kept loaded: libraries with thread pools (OpenBLAS) or global state (libcurl) are not safe to unload
  // while the process runs, and the objects below live until exit anyway.
}

void* DynLib::symbol(const char* sym) const {
  dlerror();
  void* p = dlsym(handle_, sym);
  if (!p) throw Error(ExitCode::failure, std::string("symbol ") + sym + " is missing from " + name_);
  return p;
}

}  // namespace repoctx
