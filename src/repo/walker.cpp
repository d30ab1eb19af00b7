#include "repo/walker.h"

#include <re2/re2.h>
#include <re2/set.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_set>

#include <unistd.h>

#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace repoctx {

// ---------------------------------------------------------------- gitignore rules
// Hand-written: libgit2 only evaluates ignore rules inside a git repository, and most trees repoctx
// indexes (installed packages, source tarballs) are not one. Patterns are translated to RE2 regexes
// following gitignore(5): '*' and '?' stop at '/', "**" spans directories, a pattern with an inner '/'
// is anchored at its .gitignore's directory, a trailing '/' matches directories only, '!' re-includes.
struct IgnoreRules::Rule {
  std::unique_ptr<RE2> re;
  std::string pattern;  // re's
  bool negate = false;
  bool dir_only = false;
};

// A file's rules as one automaton per kind of path (files: the rules without a trailing '/'; folders: all), so
// that a path is matched once per .gitignore rather than once per rule (the kernel's root .gitignore has ~100
// rules and its tree 55,000 files: matching rule by rule was a quarter of a refresh). The last matching
// rule decides, as in the loop over rules it replaces (which stays the fallback when a set does not build).
struct IgnoreRules::Sets {
  struct One {
    std::unique_ptr<RE2::Set> set;
    std::vector<size_t> rule;  // set index -> rule index
  };
  One files, dirs;
  bool ok = true;
};

IgnoreRules::IgnoreRules(std::string base_rel) : base_(std::move(base_rel)) {}
IgnoreRules::~IgnoreRules() = default;
IgnoreRules::IgnoreRules(IgnoreRules&&) noexcept = default;

void IgnoreRules::add_lines(const std::string& text) {
  for (auto line : split_lines(text)) add_pattern(std::string(line));
}

static std::string glob_to_regex(const std::string& pat) {
  std::string re;
  size_t i = 0, n = pat.size();
  while (i < n) {
    char c = pat[i];
    if (c == '*') {
      if (i + 1 < n && pat[i + 1] == '*') {
        bool at_start = i == 0 || pat[i - 1] == '/';
        bool at_end = i + 2 == n || pat[i + 2] == '/';
        if (at_start && at_end) {
          if (i + 2 == n)
            re += ".*";  // "a/**" -> everything inside
          else {
            re += "(?:.*/)?";
            i += 3;
            continue;
          }  // "**/" -> zero or more directories
          i += 2;
          continue;
        }
        re += "[^/]*";
        i += 2;
        continue;
      }
      re += "[^/]*";
    } else if (c == '?') {
      re += "[^/]";
    } else if (c == '[') {
      size_t j = i + 1;
      if (j < n && (pat[j] == '!' || pat[j] == '^')) ++j;
      if (j < n && pat[j] == ']') ++j;
      while (j < n && pat[j] != ']') ++j;
      if (j >= n) {
        re += "\\[";
      } else {
        std::string cls = pat.substr(i + 1, j - i - 1);
        if (!cls.empty() && cls[0] == '!') cls[0] = '^';
        re += "[" + cls + "]";
        i = j;
      }
    } else if (c == '\\' && i + 1 < n) {
      re += RE2::QuoteMeta(std::string(1, pat[i + 1]));
      ++i;
    } else {
      re += RE2::QuoteMeta(std::string(1, c));
    }
    ++i;
  }
  return re;
}

void IgnoreRules::add_pattern(const std::string& raw) {
  std::string p = raw;
  if (!p.empty() && p.back() == '\r') p.pop_back();
  if (p.empty() || p[0] == '#') return;
  // Trailing spaces are ignored unless escaped.
  while (!p.empty() && p.back() == ' ' && !(p.size() >= 2 && p[p.size() - 2] == '\\')) p.pop_back();
  if (p.empty()) return;
  auto rule = std::make_unique<Rule>();
  if (p[0] == '!') {
    rule->negate = true;
    p = p.substr(1);
  } else if (p.size() > 1 && p[0] == '\\' && (p[1] == '!' || p[1] == '#')) {
    p = p.substr(1);
  }
  if (!p.empty() && p.back() == '/') {
    rule->dir_only = true;
    p.pop_back();
  }
  if (p.empty()) return;
  bool anchored = p.find('/') != std::string::npos;
  if (!p.empty() && p[0] == '/') p = p.substr(1);
  std::string re = glob_to_regex(p);
  std::string full = anchored ? "^" + re + "$" : "^(?:.*/)?" + re + "$";
  RE2::Options o;
  o.set_log_errors(false);
  rule->re = std::make_unique<RE2>(full, o);
  if (!rule->re->ok()) return;
  rule->pattern = std::move(full);
  rules_.push_back(std::move(rule));
  sets_.reset();
}

const IgnoreRules::Sets& IgnoreRules::sets() const {
  if (sets_) return *sets_;
  auto s = std::make_unique<Sets>();
  // RE2 20220601's Set::Match crashes when its automaton cannot get the memory to start (seen with 3,000
  // rules, 105 KB of regexes, at the default 8 MB): sets stay far below that (64 MB for at most 32 KB of
  // regexes, where 133 KB ran fine); a larger file is matched rule by rule, as before the sets.
  size_t bytes = 0;
  for (const auto& r : rules_) bytes += r->pattern.size();
  if (bytes > (size_t{32} << 10)) {
    s->ok = false;
    sets_ = std::move(s);
    return *sets_;
  }
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(int64_t{64} << 20);
  for (bool dirs : {false, true}) {
    Sets::One& one = dirs ? s->dirs : s->files;
    one.set = std::make_unique<RE2::Set>(o, RE2::ANCHOR_BOTH);
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (rules_[i]->dir_only && !dirs) continue;
      if (one.set->Add(rules_[i]->pattern, nullptr) < 0) s->ok = false;
      one.rule.push_back(i);
    }
    if (s->ok && !one.set->Compile()) s->ok = false;
  }
  sets_ = std::move(s);
  return *sets_;
}

int IgnoreRules::match(const std::string& rel, bool is_dir) const {
  std::string local;
  if (base_.empty()) {
    local = rel;
  } else {
    if (rel.size() <= base_.size() || rel.compare(0, base_.size(), base_) != 0 || rel[base_.size()] != '/') return 0;
    local = rel.substr(base_.size() + 1);
  }
  if (rules_.empty()) return 0;
  if (const Sets& s = sets(); s.ok) {
    const Sets::One& one = is_dir ? s.dirs : s.files;
    thread_local std::vector<int> hits;
    hits.clear();
    RE2::Set::ErrorInfo error{RE2::Set::kNoError};
    if (one.set->Match(local, &hits, &error) && !hits.empty())
      return rules_[one.rule[static_cast<size_t>(*std::max_element(hits.begin(), hits.end()))]]->negate ? -1 : 1;
    if (error.kind == RE2::Set::kNoError) return 0;
    // The automaton ran out of memory (thousands of rules): the rules one by one below.
  }
  for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
    const Rule& r = **it;
    if (r.dir_only && !is_dir) continue;
    if (RE2::FullMatch(local, *r.re)) return r.negate ? -1 : 1;
  }
  return 0;
}

// ---------------------------------------------------------------- rules by name
namespace {

const std::unordered_set<std::string> kAlwaysSkipDirs = {
    ".git",     ".hg",   ".svn",        ".bzr",          "__pycache__",   "node_modules",
    ".tox",     ".nox",  ".mypy_cache", ".pytest_cache", ".ruff_cache",   ".eggs",
    ".repoctx", ".idea", ".vscode",     "site-packages", "dist-packages",
    // (virtual environments are recognised by their pyvenv.cfg, not by name: the stdlib has a venv package)
};
const std::unordered_set<std::string> kVendoredDirs = {
    "vendor", "vendored", "_vendor", "third_party", "thirdparty", "third-party", "extern", "externals",
};

bool is_source_name(const std::string& name) {
  return language_from_path(name) != Language::unknown;
}

std::string read_head(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string buf(n, '\0');
  in.read(buf.data(), static_cast<std::streamsize>(n));
  buf.resize(static_cast<size_t>(in.gcount()));
  return buf;
}

}  // namespace

std::string WalkOptions::fingerprint() const {
  std::string f = std::to_string(max_file_bytes) + "|" + (follow_symlinks ? "1" : "0") + (skip_vendored ? "1" : "0") +
                  (skip_generated ? "1" : "0") + (skip_tests ? "1" : "0") + (every_text_file ? "|text" : "");
  for (const auto& p : extra_ignore_patterns) f += "|" + p;
  return f;
}

bool looks_generated(const std::string& head) {
  // Only the first lines count: a "do not edit" far down a file is usually prose.
  size_t cut = 0;
  for (int i = 0; i < 5 && cut != std::string::npos; ++i) cut = head.find('\n', cut + 1);
  std::string top = head.substr(0, cut == std::string::npos ? head.size() : cut);
  std::string low;
  for (char c : top) low.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return low.find("@generated") != std::string::npos || low.find("do not edit") != std::string::npos ||
         low.find("automatically generated") != std::string::npos || low.find("autogenerated") != std::string::npos ||
         low.find("generated by the protocol buffer compiler") != std::string::npos;
}

namespace {

// One walk: the ignore rules of the folders above the current one, the folders already visited (for
// symlink loops), and what was found.
class Walker {
 public:
  Walker(fs::path root, const WalkOptions& opt) : root_(std::move(root)), opt_(opt) {}

  WalkResult run() {
    IgnoreRules base("");
    std::error_code ec;
    for (const char* f : {".git/info/exclude", ".gitignore", ".repoctxignore"}) {
      fs::path p = root_ / f;
      if (fs::is_regular_file(p, ec)) base.add_lines(read_file_if_present(p.string()).value_or(""));
    }
    for (const auto& pat : opt_.extra_ignore_patterns) base.add_pattern(pat);
    rules_.push_back(std::move(base));
    walk_dir(root_, "");
    std::sort(res_.files.begin(), res_.files.end(), [](const auto& a, const auto& b) { return a.rel < b.rel; });
    return std::move(res_);
  }

 private:
  bool ignored(const std::string& rel, bool is_dir) const {
    // Deeper .gitignore files take precedence over shallower ones (gitignore(5)).
    for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
      int m = it->match(rel, is_dir);
      if (m != 0) return m > 0;
    }
    return false;
  }

  void skip(const std::string& rel, std::string reason) { res_.skipped.push_back({rel, std::move(reason)}); }

  // Recursion depth is bounded by path length: a path deeper than PATH_MAX fails to list (and is skipped).
  void walk_dir(const fs::path& dir, const std::string& rel) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0 && !visited_.insert({st.st_dev, st.st_ino}).second) {
      skip(rel, "symlink loop (directory already visited)");
      log_warn("'{}' leads back to a directory already walked (symlink loop): skipped", rel);
      return;
    }
    size_t depth = rules_.size();
    std::vector<fs::directory_entry> entries;
    const bool listed = list_dir(dir, rel, entries);
    // A folder's ignore files and a virtual environment's marker are looked up in its listing: a probe per
    // name and folder was a fifth of the stat calls of a no-change refresh of the Linux tree.
    if (!rel.empty() && entry_named(entries, "pyvenv.cfg")) return;  // a virtual environment
    if (!rel.empty()) push_local_rules(rel, entries);
    if (listed)
      for (const auto& ent : entries) {
        std::string name = ent.path().filename().string();
        std::string child_rel = rel.empty() ? name : rel + "/" + name;
        std::error_code ec;
        bool is_link = ent.is_symlink(ec);
        if (ent.is_directory(ec))  // follows symlinks
          consider_dir(ent, name, child_rel, is_link);
        else
          consider_file(ent, name, child_rel, is_link);
      }
    while (rules_.size() > depth) rules_.pop_back();
  }

  void push_local_rules(const std::string& rel, const std::vector<fs::directory_entry>& entries) {
    IgnoreRules local(rel);
    bool any = false;
    for (const char* f : {".gitignore", ".repoctxignore"}) {
      const fs::directory_entry* e = entry_named(entries, f);
      std::error_code ec;
      if (e && e->is_regular_file(ec)) {
        local.add_lines(read_file_if_present(e->path().string()).value_or(""));
        any = true;
      }
    }
    if (any) rules_.push_back(std::move(local));
  }

  // The entry of a listing (sorted by name, list_dir) with this name, or null.
  static const fs::directory_entry* entry_named(const std::vector<fs::directory_entry>& entries, const char* name) {
    const fs::path key(name);
    auto it = std::lower_bound(entries.begin(), entries.end(), key,
                               [](const fs::directory_entry& e, const fs::path& k) { return e.path().filename() < k; });
    return it != entries.end() && it->path().filename() == key ? &*it : nullptr;
  }

  // The entries of a folder, sorted by name. A folder that cannot be read (or only in part) is reported,
  // never skipped silently.
  bool list_dir(const fs::path& dir, const std::string& rel, std::vector<fs::directory_entry>& entries) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) entries.push_back(*it);
    if (ec) {
      skip(rel.empty() ? "." : rel + "/", "unreadable directory: " + ec.message());
      log_warn("cannot read directory '{}': {} (skipped; listed by `repoctx files --skipped`)", rel.empty() ? "." : rel,
               ec.message());
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
    return !entries.empty();
  }

  // Whether a path (after following symlinks) lies inside the repository root.
  bool inside_root(const fs::path& p) const {
    std::error_code ec;
    fs::path target = fs::canonical(p, ec);
    std::string t = target.string(), r = root_.string() + "/";
    return !ec && (t + "/").compare(0, r.size(), r) == 0;
  }

  void consider_dir(const fs::directory_entry& ent, const std::string& name, const std::string& child_rel,
                    bool is_link) {
    if (kAlwaysSkipDirs.count(name) || ends_with(name, ".egg-info")) return;
    if (opt_.skip_vendored && kVendoredDirs.count(name)) {
      skip(child_rel + "/", "vendored tree");
      return;
    }
    if (opt_.skip_tests && (name == "tests" || name == "test" || name == "testing")) return;
    if (ignored(child_rel, true)) return;
    if (is_link && !opt_.follow_symlinks) {
      skip(child_rel + "/", "directory symlink (use --follow-symlinks)");
      return;
    }
    if (is_link && !inside_root(ent.path())) {
      // --follow-symlinks follows links within the repository only: the index (and every tool reading
      // it) must never hold files from outside the root.
      skip(child_rel + "/", "directory symlink pointing outside the repository");
      log_warn("'{}' links to a folder outside the repository: not followed", child_rel);
      return;
    }
    walk_dir(ent.path(), child_rel);
  }

  void consider_file(const fs::directory_entry& ent, const std::string& name, const std::string& child_rel,
                     bool is_link) {
    if (!(opt_.every_text_file || is_source_name(name)) || ignored(child_rel, false)) return;
    std::error_code ec;
    if (is_link) {
      if (!fs::exists(ent.path(), ec)) {
        skip(child_rel, "dangling symlink");
        if (!opt_.every_text_file) log_warn("'{}' is a symlink to a missing file (skipped)", child_rel);
        return;
      }
      if (!inside_root(ent.path())) {
        skip(child_rel, "symlink pointing outside the repository");
        return;
      }
    }
    if (!ent.is_regular_file(ec)) {
      skip(child_rel, "not a regular file");
      return;
    }
    struct stat fst {};
    if (::stat(ent.path().c_str(), &fst) != 0) {
      skip(child_rel, std::string("cannot stat: ") + std::strerror(errno));
      return;
    }
    uint64_t size = static_cast<uint64_t>(fst.st_size);
    if (size > opt_.max_file_bytes) {
      skip(child_rel, "larger than the size limit (" + std::to_string(size >> 10) + " KiB > " +
                          std::to_string(opt_.max_file_bytes >> 10) + " KiB)");
      if (!opt_.every_text_file)
        log_warn("skipping '{}': {:.1f} MB is above the {:.1f} MB limit (raise it with --max-file-mb)", child_rel,
                 static_cast<double>(size) / 1048576.0, static_cast<double>(opt_.max_file_bytes) / 1048576.0);
      return;
    }
    int64_t mtime_ns = static_cast<int64_t>(fst.st_mtim.tv_sec) * 1000000000LL + fst.st_mtim.tv_nsec;
    if (!(opt_.known_unchanged && opt_.known_unchanged(child_rel, size, mtime_ns)) &&
        !content_is_source(ent, name, child_rel))
      return;
    WalkedFile wf;
    wf.rel = child_rel;
    wf.abs = ent.path().string();
    wf.size = size;
    wf.mtime_ns = mtime_ns;
    wf.language = language_from_path(name);
    res_.files.push_back(std::move(wf));
  }

  // The rules that need the file's first bytes: readable, not binary, not generated.
  bool content_is_source(const fs::directory_entry& ent, const std::string& name, const std::string& child_rel) {
    if (::access(ent.path().c_str(), R_OK) != 0) {
      skip(child_rel, std::string("unreadable: ") + std::strerror(errno));
      if (!opt_.every_text_file) log_warn("cannot read '{}': {} (skipped)", child_rel, std::strerror(errno));
      return false;
    }
    std::string head = read_head(ent.path().string(), 8192);
    if (head.find('\0') != std::string::npos) {
      skip(child_rel, "binary content (NUL bytes)");
      if (!opt_.every_text_file) log_warn("skipping '{}': binary content", child_rel);
      return false;
    }
    if (opt_.skip_generated &&
        (ends_with(name, "_pb2.py") || ends_with(name, "_pb2_grpc.py") || looks_generated(head))) {
      skip(child_rel, "generated file");
      return false;
    }
    return true;
  }

  fs::path root_;
  const WalkOptions& opt_;
  WalkResult res_;
  std::vector<IgnoreRules> rules_;
  std::set<std::pair<dev_t, ino_t>> visited_;  // directory identities, for symlink loops
};

}  // namespace

WalkResult walk_repository(const std::string& root_in, const WalkOptions& opt) {
  std::error_code ec;
  fs::path root = fs::absolute(root_in, ec);
  if (ec || !fs::exists(root, ec)) {
    throw Error(ExitCode::not_found,
                "repository path '" + root_in + "' does not exist; pass the folder that holds the sources");
  }
  if (!fs::is_directory(root, ec)) {
    throw Error(ExitCode::not_found, "repository path '" + root_in + "' is not a directory");
  }
  return Walker(fs::canonical(root, ec), opt).run();
}

}  // namespace repoctx
