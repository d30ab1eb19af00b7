// Rust module paths for the files of a repository: a crate is the folder of a Cargo.toml, named by its
// [lib] or [package] name, and a file's module is its path below the crate's src/ (`src/a/b.rs` and
// `src/a/b/mod.rs` are module a::b, src/lib.rs the crate root), written dotted with the crate's name first
// ("regex.literal.imp") so that `crate::`, another crate's `regex::` and a test's `use regex::...` all name
// the same modules.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace repoctx {

// rel_paths: '/'-separated paths relative to `root` (only the *.rs ones are named). A file's crate is the
// nearest Cargo.toml at or above its folder inside the root that names a package (a symbolic link is not
// read); without one, root_name is the crate (`-` written `_`). Files outside src/ (tests/, benches/,
// examples/, build.rs) are their own crates in Cargo; here they are named below the crate they test
// ("regex.tests.misc"), so that they reach it by its name. A src/main.rs beside a src/lib.rs is "<crate>.main".
std::unordered_map<std::string, std::string> rust_module_names(const std::vector<std::string>& rel_paths,
                                                               const std::string& root, const std::string& root_name);

// The crate name a Cargo.toml gives its library: [lib] name, else [package] name, `-` written `_` ("" when
// it names no package, e.g. a workspace's manifest).
std::string cargo_crate_name(const std::string& cargo_toml_text);

}  // namespace repoctx
