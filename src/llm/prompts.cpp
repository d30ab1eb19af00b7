#include "llm/prompts.h"

#include <filesystem>
#include <fstream>
#include <mutex>

#include "util/error.h"
#include "util/file_io.h"
#include "util/text.h"

namespace repoctx {

// Generated at build time from prompts/*.txt (cmake/embed.cmake).
extern const std::map<std::string, std::string>& embedded_prompts();

namespace {
std::mutex g_mu;
std::string g_dir;
}  // namespace

void set_prompts_dir(const std::string& dir) {
  std::lock_guard lk(g_mu);
  g_dir = dir;
}

std::vector<std::string> prompt_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : embedded_prompts()) out.push_back(k);
  return out;
}

static PromptTemplate parse(const std::string& name, const std::string& text) {
  PromptTemplate t;
  t.name = name;
  std::string* cur = nullptr;
  bool header = true;
  for (auto line : split_lines(text)) {
    if (header && starts_with(line, "#")) continue;
    header = false;
    std::string_view l = trim(line);
    if (l == "[system]") {
      cur = &t.system;
      continue;
    }
    if (l == "[user]") {
      cur = &t.user;
      continue;
    }
    if (!cur) continue;
    cur->append(line);
    cur->push_back('\n');
  }
  auto strip = [](std::string& s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    while (!s.empty() && s.front() == '\n') s.erase(s.begin());
  };
  strip(t.system);
  strip(t.user);
  if (t.user.empty() && t.system.empty())
    throw Error(ExitCode::bad_input, "prompt template '" + name + "' has neither a [system] nor a [user] section");
  return t;
}

PromptTemplate load_prompt(const std::string& name) {
  std::string dir;
  {
    std::lock_guard lk(g_mu);
    dir = g_dir;
  }
  if (dir.empty())
    if (const char* e = std::getenv("REPOCTX_PROMPTS"); e && *e) dir = e;
  if (!dir.empty()) {
    std::string p = dir + "/" + name + ".txt";
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) {
      return parse(name, read_file(p, "prompt template"));
    }
  }
  auto it = embedded_prompts().find(name);
  if (it == embedded_prompts().end()) {
    std::string names;
    for (const auto& n : prompt_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error(ExitCode::not_found, "no prompt template '" + name + "' (available: " + names + ")");
  }
  return parse(name, it->second);
}

std::string render_text(const std::string& text, const std::map<std::string, std::string>& vars,
                        const std::string& origin) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("{{", i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) throw Error(ExitCode::bad_input, "prompt '" + origin + "': unclosed {{");
    out.append(text, i, open - i);
    std::string var(trim(std::string_view(text).substr(open + 2, close - open - 2)));
    auto it = vars.find(var);
    if (it == vars.end())
      throw Error(ExitCode::bad_input, "prompt '" + origin + "' uses {{" + var + "}}, which was not given");
    out += it->second;
    i = close + 2;
  }
  return out;
}

std::vector<ChatMessage> render_prompt(const PromptTemplate& t, const std::map<std::string, std::string>& vars) {
  std::vector<ChatMessage> ms;
  if (!t.system.empty()) ms.push_back({"system", render_text(t.system, vars, t.name)});
  if (!t.user.empty()) ms.push_back({"user", render_text(t.user, vars, t.name)});
  return ms;
}

}  // namespace repoctx
