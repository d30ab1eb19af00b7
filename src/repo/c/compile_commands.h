// A C/C++ build's include directories from its compilation database (compile_commands.json, which CMake, Meson,
// Bear and others write): which folders each source file's `#include`s search, in the compiler's order. Read at
// index time into the index, so that an include resolves as that build compiles it; without one, the include
// lookup's path-suffix rule stands (repo/c/includes.h).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace repoctx {

struct CompileIncludes {
  std::vector<std::string> dirs;                              // folders relative to the root ("" = the root)
  std::unordered_map<std::string, std::vector<int>> of_file;  // source file -> indices into dirs, in search order
  std::vector<int> quote_only;                                // indices of -iquote folders (quoted includes only)
  std::string source;                                         // the database read, relative to the root

  bool empty() const { return dirs.empty(); }
  // The folders `file`'s includes search: its own entry's, else (a header, a file the build does not compile)
  // every folder the database names, in first-seen order.
  std::vector<std::string> dirs_for(const std::string& file, bool quoted) const;
  std::string to_json() const;
  static CompileIncludes from_json(const std::string& text);  // empty on "" or malformed text
};

// compile_commands.json at the root or in build/ (a link to one is followed while it stays inside the root):
// each entry's -I, -iquote, -isystem and -idirafter folders inside the repository, the entry's file named
// relative to the root. Entries, folders and files outside the repository are left out. Bounded: a database
// over 64 MiB is not read.
CompileIncludes read_compile_commands(const std::string& root);

// What identifies the database's content cheaply (its path, size and modification time; "" when there is none):
// an index run re-reads and re-parses the database only when this changed since the last run.
std::string compile_commands_stamp(const std::string& root);

// A compile command's arguments, split as a POSIX shell splits words (quotes and backslashes; no expansion):
// the database's "command" form. Nothing is run.
std::vector<std::string> split_command_line(const std::string& command);

}  // namespace repoctx
