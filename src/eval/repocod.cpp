#include "eval/repocod.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "util/error.h"
#include "util/text.h"

namespace repoctx {

namespace fs = std::filesystem;

namespace {

// The lines that carry a definition's meaning: trimmed, without blank lines and decorators (REPOCOD's
// full_function starts at the def line; the index's text starts at the first decorator).
std::vector<std::string> meaningful_lines(const std::string& text) {
  std::vector<std::string> out;
  for (auto line : split_lines(text)) {
    std::string t(trim(line));
    if (t.empty() || t[0] == '@') continue;
    out.push_back(std::move(t));
  }
  return out;
}

std::string entity_text(const Engine& eng, int entity) {
  const EntityRec& e = eng.view().entities()[entity];
  const std::string& content = eng.view().content(e.file);
  return content.substr(e.start_byte, e.end_byte - e.start_byte);
}

}  // namespace

double definition_match(const std::string& reference, const std::string& candidate) {
  auto ref = meaningful_lines(reference);
  if (ref.empty()) return 0;
  auto cand = meaningful_lines(candidate);
  std::map<std::string, int> have;
  for (auto& l : cand) ++have[l];
  int found = 0;
  for (const auto& l : ref) {
    auto it = have.find(l);
    if (it != have.end() && it->second > 0) {
      --it->second;
      ++found;
    }
  }
  // Extra lines in the candidate count against it, so that a longer definition holding the reference's
  // lines does not tie with the reference itself.
  size_t longer = std::max(ref.size(), cand.size());
  return static_cast<double>(found) / static_cast<double>(longer);
}

TargetRef resolve_repocod_target(const Engine& eng, const std::string& file, const std::string& function,
                                 const std::string& full_function, std::string* how) {
  const RepoView& v = eng.view();
  auto f = v.file_by_path(file);
  if (!f) return eng.resolve_target(file + "::" + function);  // its error names the file and close ones
  std::vector<int> exact, suffix;
  const FileRec& fr = v.files()[*f];
  for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
    const EntityRec& e = v.entities()[i];
    if (!is_callable(e.kind)) continue;
    if (e.qualname == function)
      exact.push_back(i);
    else if (ends_with(e.qualname, "." + function))
      suffix.push_back(i);
  }
  std::vector<int>& candidates = exact.empty() ? suffix : exact;
  if (candidates.empty()) return eng.resolve_target(file + "::" + function);  // not found, with close names
  auto done = [&](int entity, const char* rule) {
    if (how) *how = rule;
    return TargetRef{*f, entity};
  };
  if (candidates.size() == 1) return done(candidates[0], exact.empty() ? "unique suffix" : "qualname");
  if (full_function.empty()) {
    // The engine's rule for a name defined twice: the last definition is the live one.
    if (!exact.empty()) return done(exact.back(), "qualname");
    std::string names;
    for (int c : candidates) names += (names.empty() ? "" : ", ") + v.entities()[c].qualname;
    throw Error(ExitCode::bad_input, "'" + function + "' names " + std::to_string(candidates.size()) +
                                         " definitions in " + file + " (" + names +
                                         ") and the task has no full_function to tell them apart");
  }
  double best = -1, second = -1;
  int best_entity = -1;
  for (int c : candidates) {
    double m = definition_match(full_function, entity_text(eng, c));
    if (m > best) {
      second = best;
      best = m;
      best_entity = c;
    } else if (m > second) {
      second = m;
    }
  }
  if (best <= 0 || best == second) {
    std::string names;
    for (int c : candidates)
      names += (names.empty() ? "" : ", ") + v.entities()[c].qualname + " at line " +
               std::to_string(v.entities()[c].start_line);
    throw Error(ExitCode::bad_input, "'" + function + "' names " + std::to_string(candidates.size()) +
                                         " definitions in " + file + " (" + names +
                                         ") and full_function matches none of them better than the others");
  }
  return done(best_entity, "full_function");
}

std::vector<std::string> read_repocod_test_ids(const std::string& path, const std::string& cases_dir,
                                               const std::string& where) {
  std::error_code ec;
  std::string found;
  if (fs::is_regular_file(path, ec))
    found = path;
  else if (!cases_dir.empty() && fs::is_regular_file(fs::path(cases_dir) / fs::path(path).filename(), ec))
    found = (fs::path(cases_dir) / fs::path(path).filename()).string();
  if (found.empty())
    throw Error(ExitCode::not_found,
                where + ": the relevant-tests file '" + path + "' is not here" +
                    (cases_dir.empty() ? "" : " nor under " + cases_dir) +
                    ": copy the target_test_cases folder out of REPOCOD's image and pass --test-cases-dir DIR");
  std::ifstream in(found);
  std::vector<std::string> ids;
  std::string line;
  while (std::getline(in, line)) {
    std::string t(trim(line));
    if (!t.empty() && t[0] != '#') ids.push_back(t);
  }
  if (ids.empty()) throw Error(ExitCode::bad_input, where + ": the relevant-tests file '" + found + "' lists no test");
  return ids;
}

}  // namespace repoctx
