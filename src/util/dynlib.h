// A shared library opened at first use (dlopen) instead of at program start.
//
// Why: every library linked into the program is mapped and relocated before main() runs, by every command.
// OpenBLAS/LAPACK (three routines, used only when a reasoning subspace is built or applied) and libcurl with
// its ~20 dependencies (used only by the OpenAI-compatible backend) would be most of the program's start-up
// relocations, a fixed cost on every cold query (docs/BENCHMARKS.md, bench-serve). Opening them when first
// needed keeps that cost off the commands that never use them. dlopen/dlsym are the system's API for this;
// no library wraps them usefully.
#pragma once

#include <string>
#include <vector>

namespace repoctx {

class DynLib {
 public:
  // Opens the first of `names` (sonames or paths) that loads. Throws Error(failure) listing them, with
  // dlerror()'s reason and `hint` (what to install) when none does.
  DynLib(const std::vector<std::string>& names, const std::string& hint);
  ~DynLib();
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;

  // The address of `name`; throws Error(failure) naming the library and the symbol when it is missing.
  void* symbol(const char* name) const;
  template <class F>
  F* function(const char* name) const {
    return reinterpret_cast<F*>(symbol(name));
  }
  const std::string& name() const { return name_; }

 private:
  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace repoctx
