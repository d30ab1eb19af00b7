// What a request text (an issue, a commit message) says about where the change goes, read without a model:
// the frames of quoted stack traces, file paths, dotted module/attribute names, identifiers in prose and in
// quoted code, and string literals / exception messages. `locate` (locate.h) matches these against the
// index. Regular expressions are RE2; the rules that pick which tokens count are hand-written because they
// are this strategy's design (no library decides what in an issue names code).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace repoctx {

struct TraceFrame {
  std::string path;      // as quoted ("/usr/lib/python3/dist-packages/flask/app.py", "src/x.py")
  int line = 0;          // 0 when the frame has no line
  std::string function;  // "" when the frame names none ("<module>" is kept)
};

struct RequestEvidence {
  std::vector<TraceFrame> frames;             // text order (Python tracebacks: outermost first)
  std::vector<std::string> paths;             // "a/b/c.py" or "c.py", distinct, text order
  std::vector<std::string> dotted;            // "pkg.mod.Class.meth" (two parts or more, not a path), distinct
  std::vector<std::string> identifiers;       // code-like names in prose: snake_case, CamelCase, `quoted`, f(...)
  std::vector<std::string> code_identifiers;  // every name inside code blocks, >>> lines and tracebacks
  std::vector<std::string> literals;          // quoted strings and exception messages ("ValueError: ...")
  std::vector<std::string> exceptions;        // exception class names ("ValueError")
};

RequestEvidence extract_evidence(std::string_view text);

// Word trigrams of a literal that are worth searching for in code (lowercased words of letters only, runs
// broken by format placeholders and numbers), at most `max` of them; a literal of one or two words yields
// itself when it is long enough to be specific (8+ characters).
std::vector<std::string> literal_fragments(std::string_view literal, size_t max = 8);

}  // namespace repoctx
