// ProjAgent 4.4's syntax check as Python itself does it: the candidate file is compiled by the python3
// the repository targets (compile(..., "exec"), which also runs the symbol-table checks ast.parse skips),
// and the model gets Python's message, line and column. tree-sitter accepts code Python rejects
// (`print "hello"` parses as a Python 2 print statement), so it is only the fallback, with a warning,
// when no interpreter can be found.
//
// One persistent helper process per interpreter, fed candidates over a pipe (argv, no shell; `-I -S`:
// isolated from PYTHON* variables and the user's site), answers in about a tenth of a millisecond for a
// function-sized file; starting a process per candidate costs ~20 ms (`repoctx bench-syntax`,
// docs/BENCHMARKS.md). A helper that dies or hangs is restarted for the next candidate.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace repoctx {

struct PythonSyntaxError {
  std::string message;  // Python's, e.g. "Missing parentheses in call to 'print'. Did you mean print(...)?"
  int line = 0;         // 1-based; 0 when Python names none
  int column = 0;       // 1-based; 0 when Python names none
  std::string text;     // the offending line, as Python shows it
};

class PythonCompiler {
 public:
  // `interpreter`: an absolute path (resolve_python()).
  explicit PythonCompiler(std::string interpreter);
  ~PythonCompiler();
  PythonCompiler(const PythonCompiler&) = delete;
  PythonCompiler& operator=(const PythonCompiler&) = delete;

  const std::string& interpreter() const { return interpreter_; }
  std::string version();  // "3.11.2" (starts the helper)
  // nullopt when `source` compiles. Throws Error(failure) when the interpreter cannot run at all.
  std::optional<PythonSyntaxError> check(const std::string& source);
  // The same with a new process for this one candidate (the reference `bench-syntax` measures against).
  std::optional<PythonSyntaxError> check_in_new_process(const std::string& source);

 private:
  void start();
  void stop();
  std::optional<PythonSyntaxError> ask(const std::string& source);
  std::string interpreter_, version_;
  int pid_ = -1, to_child_ = -1, from_child_ = -1;
  std::string pending_;  // bytes read past the last answer line
  std::mutex mu_;
  std::unordered_map<std::string, std::optional<PythonSyntaxError>> memo_;  // by content hash (bounded)
};

// The interpreter: `configured` (a flag or the config's "python"; a name is looked up on PATH), else
// $REPOCTX_PYTHON, else python3 on PATH. "" when none is found; Error(not_found) when an explicitly
// configured one (`configured` or $REPOCTX_PYTHON) does not exist.
std::string resolve_python(const std::string& configured);

// The process-wide compiler of the resolved interpreter (one helper each), or null when no python3 is
// found: the caller falls back to tree-sitter; the first fallback is announced with a warning.
PythonCompiler* python_compiler(const std::string& configured);

}  // namespace repoctx
