// ProjAgent 4.4's static-analysis feedback, conservative: a finding is reported only when it is certain
// (the checked name resolves completely inside the repository, or provably resolves to nothing).
// Implemented here: the syntax check (Python's own compile() in the repository's python3, with its
// message, line and column: python_syntax.h; tree-sitter's error nodes when no python3 is found); (1) calls of methods
// on self/cls: the method must exist in the class hierarchy and accept the arguments; (4) standalone function calls:
// the name must be defined and the function must accept the arguments (defaults, *args, **kwargs, keyword-only
// respected). (2) field reads on self: the field must be a member of the hierarchy or assigned by one of its methods.
// (3) variable-method calls: x.m(...) where every binding of the local x is `x = C(...)` with C a
// repository class whose hierarchy is closed: m must be an attribute of C, called with a valid count.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "retrieve/engine.h"

namespace repoctx {

struct StaticFinding {
  std::string check;    // "syntax" | "method_call" | "field_access" | "variable_method" | "function_call"
  int line = 0;         // in the checked file text
  std::string message;  // what is wrong, in words a model can act on
  nlohmann::json to_json() const;
};

// Checks the definition of `target` (an indexed function or method) as it reads in `file_text`, the
// target's file with a candidate implementation in place (the indexed content = the real body). Names
// are resolved in the indexed repository, from the scope around the target.
// What the checks could verify (not only what they reported): a sweep with 0 findings means something
// only if it looked at many sites.
struct CheckCoverage {
  int argument_counts = 0;       // calls whose signature was certain and checked, (1) (3) (4)
  int typed_receiver_calls = 0;  // x.m(...) with x's class inferred, (3)
};
struct CheckOptions {
  // The interpreter of the syntax check: "" = $REPOCTX_PYTHON, else python3 on PATH (resolve_python);
  // "none" = tree-sitter only.
  std::string python;
};
std::vector<StaticFinding> check_function(const Engine& e, int target, const std::string& file_text,
                                          CheckCoverage* coverage = nullptr, const CheckOptions& options = {});

// False-alarm measurement: every function and method of every file, on its real body.
struct FalseAlarmReport {
  int functions = 0, files = 0;
  std::vector<std::pair<std::string, StaticFinding>> findings;  // (path::qualname, finding)
  CheckCoverage coverage;
  double seconds = 0;
};
FalseAlarmReport check_all_real_bodies(const Engine& e, int max_functions = 0, const CheckOptions& options = {});

// Detection: one error of each kind injected as the first statement of real bodies (every `stride`-th
// function), and the share the checks catch. Kinds: missing_method (self.<new name>() in methods),
// wrong_arity (a plain module-level function of the same file called with one argument too many),
// undefined_function (a call of a new name), syntax (an unclosed parenthesis), variable_method (`x = C()` with
// C the file's first top-level class, then x.<new name>()).
struct DetectionReport {
  std::map<std::string, std::pair<int, int>> by_kind;       // kind -> (caught, injected)
  std::vector<std::pair<std::string, std::string>> misses;  // (kind, path::qualname) not caught
  double seconds = 0;
};
DetectionReport injected_error_detection(const Engine& e, int stride = 1, const CheckOptions& options = {});

}  // namespace repoctx
