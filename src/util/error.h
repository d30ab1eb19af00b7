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

// A write refused for lack of space (SQLITE_FULL, ENOSPC, EDQUOT): bad_input, with a message naming the file,
// saying the disk is full and what to do. Its own type so that code which otherwise carries on after a
// failed write (the query image, whose absence only slows queries) passes it on to the user instead.
class DiskFull : public Error {
 public:
  explicit DiskFull(const std::string& what) : Error(ExitCode::bad_input, what) {}
};

}  // namespace repoctx
