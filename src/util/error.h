// Errors that reach the user: a message that names the problem and what to do, and an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace repoctx {

// Exit codes of the CLI (documented in README.md).
enum class ExitCode : int {
  ok = 0,
  failure = 1,        // unexpected internal failure
  usage = 2,          // bad command line
  not_found = 3,      // missing repository, file or target
  bad_input = 4,      // unreadable or malformed input (index, config, task file)
  llm = 5,            // an LLM backend failed after retries
  interrupted = 130,  // SIGINT; work done so far is kept
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

}  // namespace repoctx
