// Members of classes outside the repository, read from the installed Python sources (site-packages and
// the standard library), for the static checks' closed-hierarchy rule: flask's classes derive from
// werkzeug's and click's, sklearn's from the standard library's. A class is followed only when it is
// certain: Python source found, every base followed too (or a builtin of the generated table), no
// __getattr__/__getattribute__, no setattr or __dict__ writes, no metaclass other than ABCMeta, no
// decorator that may add attributes. C extensions (numpy.ndarray) are not followed.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

namespace repoctx {

// Search roots: $REPOCTX_PYTHON_PATH (':'-separated) when set, else the Debian interpreter's
// /usr/local/lib/python3*/dist-packages, /usr/lib/python3/dist-packages and /usr/lib/python3.*.
std::vector<std::string> default_python_roots();

// Attribute names of the builtin and standard-library classes repository classes commonly derive from
// (generated from the interpreter by scripts/gen_python_base_members.py), or nullptr.
const std::unordered_set<std::string>* known_base_members(const std::string& dotted);

// Is `name` an attribute of some class of that table (`assertEqual`, `keys`, `shape`)?
bool known_base_name(const std::string& name);

// Class decorators that add no attribute a body could call by a name the class does not spell.
bool decorator_is_transparent(const std::string& decorator);

// The attribute names of `dotted` ("werkzeug.wrappers.Request") and all its bases, or nullptr when the
// class cannot be followed completely. Thread-safe; results are cached for the process.
const std::unordered_set<std::string>* external_class_members(const std::string& dotted);

}  // namespace repoctx
