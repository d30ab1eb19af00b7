// Text-level helpers of the Python extractor: header whitespace, string-literal values (docstrings) and
// dotted names, computed from source text without the syntax tree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace repoctx::py {

// Whitespace (and line continuations) collapsed to single spaces, none just inside brackets or before
// ',' and ':' ("def f( a,\n b )" -> "def f(a, b)").
std::string collapse_ws(std::string_view s);

// The value of Python string escapes that docstrings use (\n, \t, \r, \\, \', \", line continuation);
// other escapes are kept as written.
std::string unescape(std::string_view s);

// Appends the value of one string literal (prefix, quotes and escapes as Python reads them) to `out`;
// false for f-strings and bytes, which are not docstrings.
bool append_string_value(std::string_view literal, std::string& out);

// A dotted name without the whitespace and continuations it may be written with ("a . b" -> "a.b").
std::string dotted_name(std::string_view text);

}  // namespace repoctx::py
