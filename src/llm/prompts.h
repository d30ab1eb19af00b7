// Prompt templates. Every prompt lives in a file prompts/<name>.txt (embedded into the binary at build
// time), never in a string literal in code; `--prompts-dir DIR` or $REPOCTX_PROMPTS replaces any of them
// with DIR/<name>.txt. Format:
//
//   # comment lines at the top document the template (they are not sent)
//   [system]
//   text...
//   [user]
//   text with {{variables}}...
//
// Rendering substitutes every {{name}}; an unknown variable is an error (no silent empty prompts). The
// template's hash is part of what the LLM cache keys on (through the rendered text).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "llm/backend.h"

namespace repoctx {

struct PromptTemplate {
  std::string name;
  std::string system;
  std::string user;
};

// Throws Error(not_found) listing the available names.
PromptTemplate load_prompt(const std::string& name);
std::vector<std::string> prompt_names();
void set_prompts_dir(const std::string& dir);

std::vector<ChatMessage> render_prompt(const PromptTemplate& t, const std::map<std::string, std::string>& vars);
// {{var}} substitution in one text (exposed for tests).
std::string render_text(const std::string& text, const std::map<std::string, std::string>& vars,
                        const std::string& origin);

}  // namespace repoctx
