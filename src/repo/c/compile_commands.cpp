#include "repo/c/compile_commands.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "util/log.h"

namespace repoctx {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uintmax_t kMaxDatabaseBytes = 64ull << 20;

// `path` (absolute, or relative to `dir`) relative to `root`, or nullopt when it lies outside.
std::optional<std::string> inside_root(const fs::path& root, const fs::path& dir, const std::string& path) {
  fs::path p = fs::path(path).is_absolute() ? fs::path(path) : dir / path;
  fs::path rel = p.lexically_normal().lexically_relative(root);
  std::string s = rel.generic_string();
  if (rel.empty() || s == ".." || s.rfind("../", 0) == 0) return std::nullopt;
  if (s == ".") return std::string();
  if (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// The database's file, following a link only while it stays inside the root.
std::optional<fs::path> find_database(const fs::path& root) {
  for (const char* rel : {"compile_commands.json", "build/compile_commands.json"}) {
    std::error_code ec;
    fs::path p = root / rel;
    if (!fs::exists(fs::symlink_status(p, ec))) continue;
    fs::path real = fs::canonical(p, ec);
    if (ec || !fs::is_regular_file(real, ec)) continue;
    if (!inside_root(root, root, real.string())) {
      log_warn("{} leads outside the repository: not read", rel);
      continue;
    }
    return real;
  }
  return std::nullopt;
}

enum class DirKind { include, quote, after };

// The include folders of one entry's arguments, in the compiler's search order: -iquote (quoted includes), -I,
// -isystem, then -idirafter.
std::vector<std::pair<std::string, DirKind>> include_flags(const std::vector<std::string>& args) {
  std::vector<std::pair<std::string, DirKind>> quote, normal, system, after;
  static const std::pair<const char*, int> kFlags[] = {{"-iquote", 0}, {"-isystem", 2}, {"-idirafter", 3}, {"-I", 1}};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    for (const auto& [flag, which] : kFlags) {
      size_t n = std::char_traits<char>::length(flag);
      if (a.compare(0, n, flag) != 0) continue;
      std::string value = a.size() > n ? a.substr(n) : (i + 1 < args.size() ? args[++i] : std::string());
      if (value.empty()) break;
      auto& into = which == 0 ? quote : which == 1 ? normal : which == 2 ? system : after;
      into.emplace_back(value, which == 0 ? DirKind::quote : which == 3 ? DirKind::after : DirKind::include);
      break;
    }
  }
  for (auto* part : {&normal, &system, &after}) quote.insert(quote.end(), part->begin(), part->end());
  return quote;
}

}  // namespace

std::vector<std::string> split_command_line(const std::string& command) {
  // Written here: the database's "command" is shell words, and no library of this project splits them
  // (running a shell to do it is what this project never does). POSIX rules without expansion: whitespace
  // separates, '...' keeps everything, "..." keeps all but \" \\ \$ \`, a backslash outside quotes escapes.
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(cur));
      cur.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\' && i + 1 < command.size()) {
      cur.push_back(command[++i]);
    } else if (c == '\'') {
      size_t end = command.find('\'', i + 1);
      if (end == std::string::npos) end = command.size();
      cur.append(command, i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      for (++i; i < command.size() && command[i] != '"'; ++i) {
        if (command[i] == '\\' && i + 1 < command.size() &&
            std::string_view("\"\\$`").find(command[i + 1]) != std::string_view::npos)
          ++i;
        cur.push_back(command[i]);
      }
    } else {
      cur.push_back(c);
    }
  }
  if (in_word) out.push_back(std::move(cur));
  return out;
}

CompileIncludes read_compile_commands(const std::string& root_str) {
  CompileIncludes out;
  fs::path root = fs::path(root_str).lexically_normal();
  auto db = find_database(root);
  if (!db) return out;
  std::error_code ec;
  if (fs::file_size(*db, ec) > kMaxDatabaseBytes) {
    log_warn("{}: over 64 MiB, not read (includes resolve by their paths)", db->string());
    return out;
  }
  std::ifstream in(*db, std::ios::binary);
  json j = json::parse(in, nullptr, false);
  if (!j.is_array()) {
    log_warn("{}: not a JSON array of compile commands, not read", db->string());
    return out;
  }
  out.source = inside_root(root, root, db->string()).value_or("");
  std::unordered_map<std::string, int> index_of;
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("file") || !e["file"].is_string()) continue;
    fs::path dir =
        e.contains("directory") && e["directory"].is_string() ? fs::path(e["directory"].get<std::string>()) : root;
    auto file = inside_root(root, dir, e["file"].get<std::string>());
    if (!file || file->empty()) continue;
    std::vector<std::string> args;
    if (e.contains("arguments") && e["arguments"].is_array()) {
      for (const auto& a : e["arguments"])
        if (a.is_string()) args.push_back(a.get<std::string>());
    } else if (e.contains("command") && e["command"].is_string()) {
      args = split_command_line(e["command"].get<std::string>());
    }
    std::vector<int>& dirs = out.of_file[*file];
    dirs.clear();  // a file compiled twice: its last entry
    for (const auto& [value, kind] : include_flags(args)) {
      auto rel = inside_root(root, dir, value);
      if (!rel) continue;
      auto [it, added] = index_of.emplace(*rel, static_cast<int>(out.dirs.size()));
      if (added) {
        out.dirs.push_back(*rel);
        if (kind == DirKind::quote) out.quote_only.push_back(it->second);
      }
      dirs.push_back(it->second);
    }
  }
  return out;
}

std::string compile_commands_stamp(const std::string& root_str) {
  fs::path root = fs::path(root_str).lexically_normal();
  auto db = find_database(root);
  if (!db) return {};
  std::error_code ec;
  uintmax_t size = fs::file_size(*db, ec);
  if (ec) return {};
  auto mtime = fs::last_write_time(*db, ec);
  if (ec) return {};
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  return db->generic_string() + "|" + std::to_string(size) + "|" + std::to_string(ns);
}

std::vector<std::string> CompileIncludes::dirs_for(const std::string& file, bool quoted) const {
  std::vector<std::string> out;
  // quote_only holds the few -iquote folders: a scan, no set built per call.
  auto add = [&](int d) {
    if (d < 0 || d >= static_cast<int>(dirs.size())) return;
    if (quoted || std::find(quote_only.begin(), quote_only.end(), d) == quote_only.end()) out.push_back(dirs[d]);
  };
  if (auto it = of_file.find(file); it != of_file.end()) {
    for (int d : it->second) add(d);
  } else {
    for (int d = 0; d < static_cast<int>(dirs.size()); ++d) add(d);
  }
  return out;
}

std::string CompileIncludes::to_json() const {
  if (empty()) return {};
  json files = json::object();
  for (const auto& [f, ds] : of_file) files[f] = ds;
  return json{{"source", source}, {"dirs", dirs}, {"quote_only", quote_only}, {"files", files}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

CompileIncludes CompileIncludes::from_json(const std::string& text) {
  CompileIncludes out;
  if (text.empty()) return out;
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return out;
  try {
    out.source = j.value("source", std::string());
    out.dirs = j.value("dirs", std::vector<std::string>());
    out.quote_only = j.value("quote_only", std::vector<int>());
    if (j.contains("files") && j["files"].is_object())
      for (const auto& [f, ds] : j["files"].items()) out.of_file[f] = ds.get<std::vector<int>>();
  } catch (const json::exception&) {
    return CompileIncludes{};
  }
  return out;
}

}  // namespace repoctx
