// ProjAgent 4.4's output side: the model's answer -> the function's new body -> the patched file and a
// unified diff. The original header (decorators, signature, docstring) is kept verbatim; only the body
// statements are replaced, so a model that drops a decorator or rewrites the signature cannot change the
// function's interface.
#pragma once

#include <string>

#include "repo/model.h"

namespace repoctx {

// The first fenced code block of an answer (```python or ```), else the whole answer.
std::string extract_code_block(const std::string& answer);

struct ExtractedBody {
  bool found = false;
  std::string body;     // the statements after the docstring, dedented to column 0 (no trailing newline)
  std::string problem;  // why nothing was found (a message a model can act on)
};
// The body of the definition of `name` in `code` (the shallowest one when several).
ExtractedBody extract_body(const std::string& code, const std::string& name);

// `content` with the body of `target` (an entity of that content) replaced by `body` (dedented), indented
// like the original body. Python: the body statements' lines; Java: everything between the braces of the
// method's block, the closing brace kept on a line of its own.
std::string splice_body(const std::string& content, const Entity& target, const std::string& body,
                        Language language = Language::python);

// A body that fails loudly when run, in the target's language: Python `raise NotImplementedError("...")`,
// Java `throw new UnsupportedOperationException("...");`. `message` must not contain quotes.
std::string stub_body(Language language, const std::string& message);

// The body of `target` as `content` holds it, dedented: what splice_body() puts back unchanged.
std::string current_body(const std::string& content, const Entity& target, Language language);

// A unified diff of two versions of one file: the change is one contiguous line range, so a single hunk
// from the common prefix and suffix is exact (no LCS needed, hence no diff library).
std::string unified_diff(const std::string& path, const std::string& before, const std::string& after, int context = 3);

}  // namespace repoctx
