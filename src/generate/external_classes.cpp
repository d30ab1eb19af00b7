#include "generate/external_classes.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "repo/parser.h"
#include "util/file_io.h"
#include "util/text.h"

namespace repoctx {

namespace fs = std::filesystem;

namespace {
using MemberTable = std::unordered_map<std::string, std::unordered_set<std::string>>;
const MemberTable& base_member_table() {
  static const MemberTable table = [] {
    static const std::pair<const char*, const char*> rows[] = {
#include "generate/python_base_members.inc"
    };
    MemberTable t;
    for (const auto& [cls, names] : rows) {
      auto& set = t[cls];
      std::istringstream words(names);
      for (std::string n; words >> n;) set.insert(n);
    }
    return t;
  }();
  return table;
}
}  // namespace

const std::unordered_set<std::string>* known_base_members(const std::string& dotted) {
  const auto& table = base_member_table();
  auto it = table.find(dotted);
  return it == table.end() ? nullptr : &it->second;
}

bool known_base_name(const std::string& name) {
  static const std::unordered_set<std::string> all = [] {
    std::unordered_set<std::string> u;
    for (const auto& [cls, names] : base_member_table()) u.insert(names.begin(), names.end());
    return u;
  }();
  return all.count(name) > 0;
}

bool decorator_is_transparent(const std::string& d) {
  // pytest marks only record the mark (a `pytestmark` attribute).
  if (starts_with(d, "pytest.mark.") || starts_with(d, "mark.")) return true;
  for (const char* ok :
       {"dataclass", "dataclasses.dataclass", "total_ordering", "functools.total_ordering", "final", "typing.final"})
    if (d == ok || d.rfind(std::string(ok) + "(", 0) == 0) return true;
  return false;
}

std::vector<std::string> default_python_roots() {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("REPOCTX_PYTHON_PATH"); env && *env) {
    std::stringstream ss(env);
    for (std::string r; std::getline(ss, r, ':');)
      if (!r.empty()) roots.push_back(r);
    return roots;
  }
  auto matching = [](const std::string& dir, const std::string& prefix, const std::string& sub) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(dir, ec)) {
      std::string name = d.path().filename().string();
      if (starts_with(name, prefix) && name.size() > prefix.size() &&
          std::isdigit(static_cast<unsigned char>(name[prefix.size()])))
        if (fs::is_directory(d.path() / sub, ec)) out.push_back((d.path() / sub).lexically_normal().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  for (const auto& r : matching("/usr/local/lib", "python3.", "dist-packages")) roots.push_back(r);
  if (fs::is_directory("/usr/lib/python3/dist-packages")) roots.push_back("/usr/lib/python3/dist-packages");
  for (const auto& r : matching("/usr/lib", "python3.", ".")) roots.push_back(r);
  return roots;
}

namespace {

struct Module {
  std::string name;      // dotted
  bool package = false;  // an __init__.py
  std::string source;
  ParsedFile pf;
};

// Follows classes through modules parsed on demand. Hand-written: resolving a name through installed
// sources without running Python is what no library does; the rules mirror the repository's resolver.
class Resolver {
 public:
  const std::unordered_set<std::string>* members(const std::string& dotted) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(dotted);
    if (it != cache_.end()) return it->second ? &*it->second : nullptr;
    std::unordered_set<std::string> names;
    auto dot = dotted.rfind('.');
    bool ok = dot != std::string::npos && collect(dotted.substr(0, dot), dotted.substr(dot + 1), names, 0);
    auto& slot = cache_[dotted];
    if (ok) slot = std::move(names);
    return slot ? &*slot : nullptr;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::optional<std::unordered_set<std::string>>> cache_;
  std::unordered_map<std::string, std::unique_ptr<Module>> modules_;  // nullptr: not found
  std::vector<std::string> roots_ = default_python_roots();
  SourceParser parser_;

  const Module* module(const std::string& name) {
    auto it = modules_.find(name);
    if (it != modules_.end()) return it->second.get();
    std::unique_ptr<Module> m;
    std::string rel = name;
    std::replace(rel.begin(), rel.end(), '.', '/');
    for (const auto& root : roots_) {
      for (bool pkg : {false, true}) {
        fs::path p = pkg ? fs::path(root) / rel / "__init__.py" : fs::path(root) / (rel + ".py");
        auto source = read_file_if_present(p.string());
        if (!source) continue;
        m = std::make_unique<Module>();
        m->name = name;
        m->package = pkg;
        m->source = std::move(*source);
        m->pf = parser_.parse(p.string(), name, m->source, Language::python);
        break;
      }
      if (m) break;
    }
    return (modules_[name] = std::move(m)).get();
  }

  // The module an import statement of `m` names (relative imports resolved against m's package).
  static std::string imported_module(const Module& m, const Import& im) {
    if (im.level == 0) return im.module;
    std::string pkg = m.name;
    for (int up = m.package ? 1 : 0; up < im.level; ++up) {
      auto d = pkg.rfind('.');
      if (d == std::string::npos) return "";
      pkg.resize(d);
    }
    return im.module.empty() ? pkg : pkg + "." + im.module;
  }

  // Collects the members of class `name` of module `mod` (following re-exports) and of its bases.
  bool collect(const std::string& mod, const std::string& name, std::unordered_set<std::string>& out, int depth) {
    if (depth > 24) return false;
    if (const auto* known = known_base_members(mod + "." + name)) {
      out.insert(known->begin(), known->end());
      return true;
    }
    const Module* m = module(mod);
    if (!m || !m->pf.errors.empty()) return false;
    const auto& ents = m->pf.entities;
    int cls = -1;
    for (size_t i = 0; i < ents.size(); ++i)
      if (ents[i].parent < 0 && ents[i].name == name)
        cls = ents[i].kind == EntityKind::klass ? static_cast<int>(i) : -2;
    if (cls == -2) return false;  // rebound at module level to something else
    if (cls < 0) {
      // A re-export: `from .request import Request as Request`.
      for (const auto& im : m->pf.imports)
        if (im.scope < 0 && !im.star && !im.name.empty() && im.bound_name() == name && !im.conditional) {
          std::string from = imported_module(*m, im);
          return !from.empty() && collect(from, im.name, out, depth + 1);
        }
      return false;
    }
    return class_members(*m, cls, out, depth);
  }

  bool class_members(const Module& m, int cls, std::unordered_set<std::string>& out, int depth) {
    const auto& ents = m.pf.entities;
    const Entity& ce = ents[static_cast<size_t>(cls)];
    for (const auto& d : ce.decorators)
      if (!decorator_is_transparent(d)) return false;
    std::vector<int> methods;
    for (size_t i = 0; i < ents.size(); ++i)
      if (ents[i].parent == cls) {
        if (ents[i].name == "__getattr__" || ents[i].name == "__getattribute__") return false;
        out.insert(ents[i].name);
        if (is_callable(ents[i].kind)) methods.push_back(static_cast<int>(i));
      }
    for (const auto& im : m.pf.imports)
      if (im.scope == cls) {
        if (im.star) return false;
        out.insert(im.bound_name());
      }
    // Instance attributes its methods assign; dynamic writes make any name possible.
    auto within = [&](int scope) {
      for (int s = scope; s >= 0; s = ents[static_cast<size_t>(s)].parent)
        if (s == cls) return true;
      return false;
    };
    bool quoted_names = false;  // __slots__ or __dict__ keys: attribute names written as strings
    for (const auto& r : m.pf.references) {
      if (r.scope < 0 || !within(r.scope)) continue;
      if (r.chain == "setattr" || r.chain == "vars") return false;  // computed names: anything is possible
      if (r.chain.find(".__dict__") != std::string::npos) quoted_names = true;
      if (r.is_store) {
        auto d = r.chain.find('.');
        if (d != std::string::npos) out.insert(r.chain.substr(d + 1, r.chain.find('.', d + 1) - d - 1));
      }
    }
    if (quoted_names || out.count("__slots__")) {
      // Take every quoted string of the class's text as a possible attribute (slot names, __dict__ keys;
      // cached properties store under their own, member, name).
      auto starts = line_starts(m.source);
      std::string_view text = line_range(m.source, starts, ce.start_line, ce.end_line);
      for (size_t q = text.find_first_of("'\""); q != std::string_view::npos; q = text.find_first_of("'\"", q + 1)) {
        size_t e = text.find(text[q], q + 1);
        if (e == std::string_view::npos) break;
        out.insert(std::string(text.substr(q + 1, e - q - 1)));
        q = e;
      }
    }
    for (std::string b : ce.bases) {
      if (b == "object") continue;
      if (b == "metaclass=ABCMeta" || b == "metaclass=abc.ABCMeta") continue;
      if (b.find('=') != std::string::npos) return false;
      if (auto s = b.find('['); s != std::string::npos) b.resize(s);
      if (!base_members(m, b, out, depth + 1)) return false;
    }
    return true;
  }

  // A base expression as written in module m.
  bool base_members(const Module& m, const std::string& base, std::unordered_set<std::string>& out, int depth) {
    std::string root = base.substr(0, base.find('.')),
                rest = base.size() > root.size() ? base.substr(root.size() + 1) : "";
    const Import* bound = nullptr;
    for (const auto& im : m.pf.imports)
      if (im.scope < 0 && !im.star && im.bound_name() == root) bound = &im;
    int local = -1;
    for (size_t i = 0; i < m.pf.entities.size(); ++i)
      if (m.pf.entities[i].parent < 0 && m.pf.entities[i].name == root) local = static_cast<int>(i);
    if (local >= 0 && rest.empty()) return collect(m.name, root, out, depth);
    if (bound) {
      std::string from = imported_module(m, *bound);
      if (from.empty()) return false;
      if (!bound->name.empty()) {
        if (rest.empty()) return collect(from, bound->name, out, depth);
        std::string sub = from + "." + bound->name +
                          (rest.find('.') != std::string::npos ? "." + rest.substr(0, rest.rfind('.')) : "");
        return collect(sub, rest.substr(rest.rfind('.') + 1), out, depth);  // `from a import b` ... b.C
      }
      // `import a.b [as x]`: x.C / a.b.C
      std::string path = bound->alias.empty() ? base : from + (rest.empty() ? "" : "." + rest);
      auto d = path.rfind('.');
      return d != std::string::npos && collect(path.substr(0, d), path.substr(d + 1), out, depth);
    }
    if (rest.empty()) {
      if (const auto* known = known_base_members("builtins." + root)) {
        out.insert(known->begin(), known->end());
        return true;
      }
    }
    return false;
  }
};

}  // namespace

const std::unordered_set<std::string>* external_class_members(const std::string& dotted) {
  static Resolver r;
  return r.members(dotted);
}

}  // namespace repoctx
