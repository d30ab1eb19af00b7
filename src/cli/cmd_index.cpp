// index, symbols, files, snippets, debug-tree: building an index and looking at what it holds.
#include <fmt/core.h>

#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "index/schema.h"
#include "index/store.h"
#include "index/totals.h"
#include "repo/parser.h"
#include "retrieve/aligncoder_snippets.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/memory.h"
#include "util/text.h"

using nlohmann::json;

namespace repoctx {
namespace {

struct IndexCmd {
  RepoOptions repo;
  OutputOptions out;
  bool force = false, rebuild = false;

  int run() const {
    IndexOptions io = index_options(repo, !out.quiet);
    io.force = force;
    io.rebuild = rebuild;
    IndexStats st = build_index(repo.repo, io);
    IndexTotals tot = index_totals(st.db_path);
    warn_if_empty(st, repo.repo);
    if (out.json) {
      print_json({{"db", st.db_path},
                  {"files", st.files_seen},
                  {"parsed", st.parsed},
                  {"unchanged", st.unchanged},
                  {"touched", st.touched},
                  {"removed", st.removed},
                  {"skipped", st.skipped},
                  {"partial", st.partial},
                  {"with_errors", st.files_with_errors},
                  {"bytes", st.bytes_parsed},
                  {"entities", st.entities},
                  {"references", st.references},
                  {"snippets", st.snippets},
                  {"seconds", st.seconds},
                  {"complete", st.complete},
                  {"peak_rss_mb", peak_rss_mb()},
                  {"totals",
                   {{"files", tot.files},
                    {"entities", tot.entities},
                    {"references", tot.references},
                    {"snippets", tot.snippets}}}});
    } else if (!out.quiet) {
      std::string what = st.parsed == 0 && st.removed == 0
                             ? fmt::format("up to date: {} files unchanged", st.unchanged)
                             : fmt::format("{} files parsed ({} entities, {} references), {} unchanged, {} removed",
                                           st.parsed, st.entities, st.references, st.unchanged, st.removed);
      fmt::print(stderr,
                 "{} in {:.2f}s: {}{}{}{}\n  the index holds {} files, {} entities, {} references, {} snippets: {}\n",
                 repo.repo, st.seconds, what, st.skipped ? fmt::format(", {} skipped", st.skipped) : "",
                 st.partial ? fmt::format(", {} partly indexed (repoctx files --skipped)", st.partial) : "",
                 st.complete ? "" : " (interrupted: run again to finish)", tot.files, tot.entities, tot.references,
                 tot.snippets, st.db_path);
    }
    return st.complete ? 0 : static_cast<int>(ExitCode::interrupted);
  }
};

struct SymbolsCmd {
  RepoOptions repo;
  OutputOptions out;
  std::string kind, file;
  bool jsonl = false;

  int run() const {
    auto eng = open_engine(repo, out);
    const auto& v = eng->view();
    json arr = json::array();
    for (const auto& e : v.entities()) {
      const auto& f = v.files()[e.file];
      if (!kind.empty() && kind != kind_name(e.kind)) continue;
      if (!file.empty() && f.path != file) continue;
      json j = {{"file", f.path},
                {"module", f.module},
                {"qualname", e.qualname},
                {"kind", kind_name(e.kind)},
                {"start_line", e.start_line},
                {"end_line", e.end_line},
                {"decorated_start_line", e.decorated_start_line},
                {"signature", sanitize_utf8(e.signature)}};
      for (const auto& d : e.decorators) j["decorators"].push_back(sanitize_utf8(d));
      if (jsonl)
        std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      else if (out.json)
        arr.push_back(std::move(j));
      else
        fmt::print("{}:{}-{}  {:<9} {}\n", f.path, e.start_line, e.end_line, kind_name(e.kind), e.qualname);
    }
    if (out.json && !jsonl) print_json(arr);
    return 0;
  }
};

// `files --skipped`: what the walk skipped (meta "skipped") and the files indexed only in part (a
// "partial" entry in their errors), each with its reason.
json skipped_files(const RepoView& v) {
  json out = json::array();
  auto db = open_index_for_reading(v.db_path());
  auto sk = json::parse(meta_get(*db, "skipped", "[]"), nullptr, false);
  if (sk.is_array())
    for (const auto& row : sk)
      if (row.is_array() && row.size() == 2 && row[0].is_string() && row[1].is_string()) out.push_back(row);
  sql::Stmt s(*db, "SELECT path, errors FROM files WHERE errors LIKE '%\"partial\"%' ORDER BY path");
  while (s.step()) {
    auto errs = json::parse(s.str(1), nullptr, false);
    if (!errs.is_array()) continue;
    for (const auto& e : errs)
      if (e.is_array() && e.size() == 4 && e[3] == "partial" && e[2].is_string())
        out.push_back({s.str(0), "partly indexed: " + e[2].get<std::string>()});
  }
  return out;
}

struct FilesCmd {
  RepoOptions repo;
  OutputOptions out;
  bool errors_only = false, skipped = false;

  int run() const {
    auto eng = open_engine(repo, out);
    const auto& v = eng->view();
    if (skipped) {
      json sk = skipped_files(v);
      if (out.json)
        print_json(sk);
      else
        for (const auto& row : sk)
          fmt::print("{}  ({})\n", sanitize_utf8(row[0].get<std::string>()), sanitize_utf8(row[1].get<std::string>()));
      return 0;
    }
    json arr = json::array();
    for (const auto& f : v.files()) {
      if (errors_only && f.n_errors == 0) continue;
      if (out.json)
        arr.push_back({{"path", f.path},
                       {"module", f.module},
                       {"language", language_name(f.language)},
                       {"lines", f.line_count},
                       {"entities", f.n_entities},
                       {"syntax_errors", f.n_errors}});
      else
        fmt::print("{}  {}  {} lines  {} entities{}\n", f.path, f.module, f.line_count, f.n_entities,
                   f.n_errors ? fmt::format("  {} syntax error regions", f.n_errors) : "");
    }
    if (out.json) print_json(arr);
    return 0;
  }
};

struct SnippetsCmd {
  RepoOptions repo;
  OutputOptions out;
  std::string file;
  bool dependency = false;

  int run() const {
    auto eng = open_engine(repo, out);
    const auto& v = eng->view();
    auto f = v.file_by_path(file);
    if (!f) throw Error(ExitCode::not_found, "file '" + file + "' is not in the index");
    json arr = json::array();
    if (dependency) {
      for (const auto& d : dependency_snippets(*eng, *f)) arr.push_back({{"label", d.label}, {"text", d.text}});
    } else {
      const FileRec& fr = v.files()[*f];
      for (int s = fr.first_snippet; s < fr.first_snippet + fr.n_snippets; ++s)
        arr.push_back({{"start_line", v.snippets()[s].start_line},
                       {"end_line", v.snippets()[s].end_line},
                       {"text", sanitize_utf8(eng->snippet_text(s))}});
    }
    if (out.json) {
      print_json(arr);
      return 0;
    }
    for (const auto& s : arr) {
      if (s.contains("label"))
        fmt::print("--- {}\n{}\n", s["label"].get<std::string>(), s["text"].get<std::string>());
      else
        fmt::print("--- lines {}-{}\n{}\n", s["start_line"].get<int>(), s["end_line"].get<int>(),
                   s["text"].get<std::string>());
    }
    return 0;
  }
};

// `imports`: every import statement of the indexed files and the repository files it loads, as the
// resolver sees them (an import loading none is outside the repository: a package, the standard library).
struct ImportsCmd {
  RepoOptions repo;
  OutputOptions out;
  std::string file;
  bool jsonl = false;

  int run() const {
    auto eng = open_engine(repo, out);
    const auto& v = eng->view();
    std::vector<int> files;
    if (!file.empty()) {
      auto f = v.file_by_path(file);
      if (!f)
        throw Error(ExitCode::not_found, "file '" + file + "' is not in the index (list them with `repoctx files`)");
      files.push_back(*f);
    } else {
      for (int f = 0; f < static_cast<int>(v.files().size()); ++f) files.push_back(f);
    }
    json arr = json::array();
    for (int f : files)
      for (const auto& im : v.imports(f)) {
        json targets = json::array();
        for (int t : eng->graph().import_files(f, im)) targets.push_back(v.files()[t].path);
        json j = {{"path", v.files()[f].path}, {"line", im.line},   {"module", im.module}, {"level", im.level},
                  {"name", im.name},           {"alias", im.alias}, {"files", targets}};
        if (jsonl)
          fmt::print("{}\n", j.dump(-1, ' ', false, json::error_handler_t::replace));
        else if (out.json)
          arr.push_back(std::move(j));
        else
          fmt::print("{}:{}  {}{}{}  ->  {}\n", sanitize_utf8(v.files()[f].path), im.line, std::string(im.level, '.'),
                     sanitize_utf8(im.module), im.name.empty() ? "" : " " + sanitize_utf8(im.name),
                     targets.empty() ? "(outside the repository)" : sanitize_utf8(join_paths(targets)));
      }
    if (out.json && !jsonl) print_json(arr);
    return 0;
  }

  static std::string join_paths(const json& targets) {
    std::string s;
    for (const auto& t : targets) s += (s.empty() ? "" : ", ") + t.get<std::string>();
    return s;
  }
};

}  // namespace

void add_index_commands(CLI::App& app, Commands& out) {
  auto ix = std::make_shared<IndexCmd>();
  auto* c = app.add_subcommand("index", "index a repository (incremental; safe to interrupt and re-run)");
  add_repo_options(c, ix->repo, false);
  add_output_options(c, ix->out);
  c->add_flag("--force", ix->force, "re-parse every file");
  c->add_flag("--rebuild", ix->rebuild,
              "delete the index (damaged, or built by another repoctx version) and build it again; never deletes "
              "a file that is not a repoctx index");
  out.push_back({c, [ix] { return ix->run(); }});

  auto sy = std::make_shared<SymbolsCmd>();
  c = app.add_subcommand("symbols", "list the definitions of an indexed repository");
  add_repo_options(c, sy->repo);
  add_output_options(c, sy->out);
  c->add_option("--kind", sy->kind, "only this kind (class, function, method, variable, attribute, ...)");
  c->add_option("--file", sy->file, "only this file (path relative to the root)");
  c->add_flag("--jsonl", sy->jsonl, "one JSON object per line")->group("Output");
  out.push_back({c, [sy] { return sy->run(); }});

  auto fi = std::make_shared<FilesCmd>();
  c = app.add_subcommand("files", "list indexed files");
  add_repo_options(c, fi->repo);
  add_output_options(c, fi->out);
  c->add_flag("--errors", fi->errors_only, "only files with syntax errors");
  c->add_flag("--skipped", fi->skipped, "files the walk skipped and files indexed only in part, each with its reason");
  out.push_back({c, [fi] { return fi->run(); }});

  auto im = std::make_shared<ImportsCmd>();
  c = app.add_subcommand("imports",
                         "list each file's imports and the repository files they load (the resolver's view)");
  add_repo_options(c, im->repo);
  add_output_options(c, im->out);
  c->add_option("--file", im->file, "only this file (path relative to the root)");
  c->add_flag("--jsonl", im->jsonl, "one JSON object per line")->group("Output");
  out.push_back({c, [im] { return im->run(); }});

  auto sn = std::make_shared<SnippetsCmd>();
  c = app.add_subcommand("snippets", "show a file's split-aggregate snippets or its dependency snippets");
  add_repo_options(c, sn->repo);
  add_output_options(c, sn->out);
  c->add_option("--file", sn->file, "path relative to the root")->required();
  c->add_flag("--dependency", sn->dependency, "AlignCoder dependency snippets of the file's imports");
  out.push_back({c, [sn] { return sn->run(); }});

  auto tree_file = std::make_shared<std::string>();
  c = app.add_subcommand("debug-tree", "print tree-sitter's syntax tree of a file");
  c->add_option("file", *tree_file)->required();
  c->group("");  // hidden
  out.push_back({c, [tree_file] {
                   std::string src = read_file(*tree_file);
                   fmt::print("{}\n", syntax_tree(src, language_from_path(*tree_file)));
                   return 0;
                 }});
}

}  // namespace repoctx
