#include "repo/javascript/manifests.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

#include "repo/model.h"
#include "repo/modules.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// tsconfig.json is JSONC: comments (which nlohmann's parser skips on request) and trailing commas (which it
// rejects). This drops a comma whose next token, past blanks and comments, closes an object or array.
std::string without_trailing_commas(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  auto skip_blank_and_comments = [&](size_t i) {
    for (;;) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (s.compare(i, 2, "//") == 0) {
        i = s.find('\n', i);
        if (i == std::string::npos) return s.size();
      } else if (s.compare(i, 2, "/*") == 0) {
        i = s.find("*/", i + 2);
        if (i == std::string::npos) return s.size();
        i += 2;
      } else {
        return i;
      }
    }
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {  // a string, copied whole (a comma or a slash inside it is text)
      size_t j = i + 1;
      while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      j = std::min(j, s.size() - 1);
      out.append(s, i, j - i + 1);
      i = j;
      continue;
    }
    if (c == '/' && (s.compare(i, 2, "//") == 0 || s.compare(i, 2, "/*") == 0)) {
      size_t j = skip_blank_and_comments(i);
      out.append(s, i, j - i);
      i = j - 1;
      continue;
    }
    if (c == ',') {
      size_t j = skip_blank_and_comments(i + 1);
      if (j < s.size() && (s[j] == '}' || s[j] == ']')) continue;
    }
    out.push_back(c);
  }
  return out;
}

// Ordered: Node takes the first condition of an `exports` object that it knows, in the object's order.
ojson parse_manifest(const std::string& head) {
  return ojson::parse(without_trailing_commas(head), nullptr, false, /*ignore_comments=*/true);
}

// A path written relative to `dir` ("./lib/x.js", "lib", "../shared/*"), relative to the root; false when it
// climbs above the root.
bool under(const std::string& dir, const std::string& path, std::string& out) {
  return normalise_relative_path(join_relative(dir, path), out);
}

// The targets of one `exports` value, in the order Node's `require` tries them (the first condition it knows,
// in the object's order), then those of `import` (an ES-only package), then `types`. A target that is not
// "./..." (Node refuses it) or climbs out of the package is passed over.
void export_targets(const ojson& v, std::vector<std::string>& out) {
  if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    if (starts_with(t, "./") && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  } else if (v.is_array()) {
    for (const auto& x : v) export_targets(x, out);
  } else if (v.is_object()) {
    for (const char* pass : {"require", "import", "types"})
      for (const auto& [cond, x] : v.items()) {
        bool taken = cond == pass || ((cond == "node" || cond == "default") && std::string(pass) == "require");
        if (taken) export_targets(x, out);
      }
  }
}

// package.json's facts as the manifest walk keeps them: "" unless it names the package.
std::string package_facts(const std::string& head) {
  auto j = parse_manifest(head);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    return {};
  ojson out = {{"name", j["name"].get<std::string>()}};
  if (j.contains("main") && j["main"].is_string()) out["main"] = j["main"].get<std::string>();
  if (j.contains("exports") && !j["exports"].is_null()) {
    const auto& ex = j["exports"];
    ojson map = ojson::object();
    bool subpaths = ex.is_object() && !ex.empty() && starts_with(ex.begin().key(), ".");
    if (subpaths) {
      for (const auto& [key, v] : ex.items()) {
        std::vector<std::string> t;
        export_targets(v, t);
        map[key] = t;
      }
    } else {
      std::vector<std::string> t;
      export_targets(ex, t);
      map["."] = t;
    }
    out["exports"] = map;
  }
  if (j.contains("imports") && j["imports"].is_object()) {  // "#internal" specifiers of the package's own files
    ojson map = ojson::object();
    for (const auto& [key, v] : j["imports"].items()) {
      std::vector<std::string> t;
      export_targets(v, t);
      if (starts_with(key, "#")) map[key] = t;
    }
    out["imports"] = map;
  }
  return out.dump();
}

// tsconfig.json's facts: "{}" for one without baseUrl, paths or extends (still the nearest: it shadows those
// above).
std::string path_facts(const std::string& head) {
  auto j = parse_manifest(head);
  if (!j.is_object()) return {};
  ojson out = ojson::object();
  if (j.contains("compilerOptions") && j["compilerOptions"].is_object()) {
    const auto& co = j["compilerOptions"];
    if (co.contains("baseUrl") && co["baseUrl"].is_string()) out["baseUrl"] = co["baseUrl"].get<std::string>();
    if (co.contains("paths") && co["paths"].is_object()) {
      ojson paths = ojson::object();
      for (const auto& [pattern, v] : co["paths"].items()) {
        std::vector<std::string> t;
        if (v.is_array())
          for (const auto& x : v)
            if (x.is_string()) t.push_back(x.get<std::string>());
        paths[pattern] = t;
      }
      out["paths"] = paths;
    }
  }
  // The configurations it extends, last first (TypeScript 5's array: a later one overrides an earlier one).
  std::vector<std::string> extends;
  if (j.contains("extends") && j["extends"].is_string()) extends.push_back(j["extends"].get<std::string>());
  if (j.contains("extends") && j["extends"].is_array())
    for (auto it = j["extends"].rbegin(); it != j["extends"].rend(); ++it)
      if (it->is_string()) extends.push_back(it->get<std::string>());
  if (!extends.empty()) out["extends"] = extends;
  return out.dump();
}

JavascriptPackage package_from(const std::string& dir, const json& facts) {
  JavascriptPackage p;
  p.name = facts.value("name", "");
  p.dir = dir;
  std::string main;
  if (facts.contains("main") && under(dir, facts["main"].get<std::string>(), main)) p.main = main;
  if (facts.contains("exports")) {
    p.has_exports = true;
    for (const auto& [key, targets] : facts["exports"].items()) {
      SpecifierMapping m{key, {}};
      for (const auto& t : targets) {
        std::string rel;
        if (under(dir, t.get<std::string>(), rel) && (dir.empty() || rel == dir || starts_with(rel, dir + "/")))
          m.targets.push_back(rel);
      }
      p.exports.push_back(std::move(m));
    }
  }
  if (facts.contains("imports"))
    for (const auto& [key, targets] : facts["imports"].items()) {
      SpecifierMapping m{key, {}};
      for (const auto& t : targets)
        if (std::string rel; under(dir, t.get<std::string>(), rel)) m.targets.push_back(rel);
      p.imports.push_back(std::move(m));
    }
  return p;
}

// A tsconfig's scope with what it extends: baseUrl from the nearest file of the chain that sets it, paths
// likewise, each relative to the folder of the file that set it; paths then map relative to the baseUrl, or
// to the folder of the file that set them without one (TypeScript's rules). A configuration of a package
// ("@tsconfig/node18/tsconfig.json") is outside the repository: the chain stops there.
JavascriptPathScope scope_from(const std::string& root, const std::string& dir, json facts) {
  JavascriptPathScope s;
  s.dir = dir;
  std::string folder = dir, paths_folder;
  json paths;
  bool have_paths = false;
  for (int depth = 0; depth < 8; ++depth) {
    if (!s.has_base && facts.contains("baseUrl"))
      s.has_base = under(folder, facts["baseUrl"].get<std::string>(), s.base);
    if (!have_paths && facts.contains("paths")) {
      paths = facts["paths"];
      paths_folder = folder;
      have_paths = true;
    }
    json next;
    std::string next_rel;
    if (facts.contains("extends"))
      for (const auto& e : facts["extends"]) {
        std::string rel, spec = e.get<std::string>();
        if (!starts_with(spec, ".") || !under(folder, spec, rel)) continue;
        if (!ends_with(rel, ".json")) rel += ".json";
        auto head = read_manifest_head(root, rel);
        std::string f = head ? path_facts(*head) : std::string();
        if (f.empty()) continue;
        next = json::parse(f);
        next_rel = rel;
        break;
      }
    if (next_rel.empty()) break;
    facts = std::move(next);
    folder = parent_folder(next_rel);
  }
  if (have_paths)
    for (const auto& [pattern, targets] : paths.items()) {
      SpecifierMapping m{pattern, {}};
      for (const auto& t : targets)
        if (std::string rel; under(s.has_base ? s.base : paths_folder, t.get<std::string>(), rel))
          m.targets.push_back(rel);
      s.paths.push_back(std::move(m));
    }
  return s;
}

json mappings_json(const std::vector<SpecifierMapping>& ms) {
  json out = json::array();
  for (const auto& m : ms) out.push_back({m.pattern, m.targets});
  return out;
}

std::vector<SpecifierMapping> mappings_from(const json& j) {
  std::vector<SpecifierMapping> out;
  if (!j.is_array()) return out;
  for (const auto& row : j)
    if (row.is_array() && row.size() == 2 && row[0].is_string() && row[1].is_array()) {
      SpecifierMapping m{row[0].get<std::string>(), {}};
      for (const auto& t : row[1])
        if (t.is_string()) m.targets.push_back(t.get<std::string>());
      out.push_back(std::move(m));
    }
  return out;
}

bool within(const std::string& dir, const std::string& path) {
  return dir.empty() || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

}  // namespace

std::vector<std::string> map_specifier(const std::vector<SpecifierMapping>& mappings, const std::string& spec) {
  for (const auto& m : mappings)
    if (m.pattern == spec) return m.targets;
  const SpecifierMapping* best = nullptr;
  size_t best_prefix = 0;
  for (const auto& m : mappings) {
    size_t star = m.pattern.find('*');
    if (star == std::string::npos) continue;
    std::string_view prefix(m.pattern.data(), star), suffix(m.pattern.data() + star + 1);
    if (spec.size() >= prefix.size() + suffix.size() && starts_with(spec, prefix) && ends_with(spec, suffix) &&
        (!best || prefix.size() > best_prefix)) {
      best = &m;
      best_prefix = prefix.size();
    }
  }
  std::vector<std::string> out;
  if (!best) return out;
  size_t star = best->pattern.find('*');
  std::string matched = spec.substr(star, spec.size() - (best->pattern.size() - 1));
  for (const auto& t : best->targets) {
    size_t s = t.find('*');
    out.push_back(s == std::string::npos ? t : t.substr(0, s) + matched + t.substr(s + 1));
  }
  return out;
}

std::string JavascriptResolution::to_json() const {
  json pk = json::array(), sc = json::array();
  for (const auto& p : packages) {
    json j = {{"name", p.name}, {"dir", p.dir}, {"main", p.main}};
    if (p.has_exports) j["exports"] = mappings_json(p.exports);
    if (!p.imports.empty()) j["imports"] = mappings_json(p.imports);
    pk.push_back(std::move(j));
  }
  for (const auto& s : scopes) {
    json j = {{"dir", s.dir}, {"paths", mappings_json(s.paths)}};
    if (s.has_base) j["base"] = s.base;
    sc.push_back(std::move(j));
  }
  return json{{"packages", pk}, {"scopes", sc}}.dump();
}

JavascriptResolution JavascriptResolution::from_json(const std::string& text) {
  JavascriptResolution r;
  if (text.empty()) return r;
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return r;
  auto str = [](const json& o, const char* k) {
    return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
  };
  if (j.contains("packages") && j["packages"].is_array())
    for (const auto& p : j["packages"]) {
      if (!p.is_object()) continue;
      JavascriptPackage pkg{str(p, "name"), str(p, "dir"), p.contains("exports"), {}, str(p, "main"), {}};
      if (pkg.has_exports) pkg.exports = mappings_from(p["exports"]);
      if (p.contains("imports")) pkg.imports = mappings_from(p["imports"]);
      r.packages.push_back(std::move(pkg));
    }
  if (j.contains("scopes") && j["scopes"].is_array())
    for (const auto& s : j["scopes"]) {
      if (!s.is_object()) continue;
      JavascriptPathScope scope{str(s, "dir"), s.contains("base"), str(s, "base"), {}};
      if (s.contains("paths")) scope.paths = mappings_from(s["paths"]);
      r.scopes.push_back(std::move(scope));
    }
  return r;
}

const JavascriptPathScope* JavascriptResolution::scope_of(const std::string& from_path) const {
  const JavascriptPathScope* best = nullptr;
  for (const auto& s : scopes)
    if (within(s.dir, from_path) && (!best || s.dir.size() > best->dir.size())) best = &s;
  return best;
}

const JavascriptPackage* JavascriptResolution::package_of(const std::string& from_path) const {
  const JavascriptPackage* best = nullptr;
  for (const auto& p : packages)
    if (within(p.dir, from_path) && (!best || p.dir.size() > best->dir.size())) best = &p;
  return best;
}

std::vector<const JavascriptPackage*> JavascriptResolution::packages_named(const std::string& name,
                                                                           const std::string& from_path) const {
  std::vector<const JavascriptPackage*> out;
  for (const auto& p : packages)
    if (p.name == name) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [&](const JavascriptPackage* a, const JavascriptPackage* b) {
    bool ia = within(a->dir, from_path), ib = within(b->dir, from_path);
    if (ia != ib) return ia;
    return a->dir.size() < b->dir.size();
  });
  return out;
}

JavascriptResolution read_javascript_resolution(const std::string& root, const std::vector<std::string>& rel_paths) {
  NearestManifest packages(root, "package.json", package_facts);
  NearestManifest tsconfigs(root, "tsconfig.json", path_facts), jsconfigs(root, "jsconfig.json", path_facts);
  std::vector<std::string> dirs;
  for (const auto& rel : rel_paths)
    if (is_javascript_family(language_from_path(rel))) dirs.push_back(parent_folder(rel));
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  std::map<std::string, json> package_at, scope_at;  // by folder: each manifest once, in path order
  for (const auto& d : dirs) {
    if (const auto& p = packages.at(d); p.found) package_at.emplace(p.dir, json::parse(p.value));
    const auto& t = tsconfigs.at(d);
    const auto& s = jsconfigs.at(d);
    const NearestManifest::Found* nearest = t.found && (!s.found || t.dir.size() >= s.dir.size()) ? &t
                                            : s.found                                             ? &s
                                                                                                  : nullptr;
    if (nearest) scope_at.emplace(nearest->dir, json::parse(nearest->value));
  }
  JavascriptResolution r;
  for (const auto& [dir, facts] : package_at) r.packages.push_back(package_from(dir, facts));
  for (const auto& [dir, facts] : scope_at) r.scopes.push_back(scope_from(root, dir, facts));
  return r;
}

}  // namespace repoctx
