#include "repo/python/grammar.h"

#include <vector>

extern "C" const TSLanguage* tree_sitter_python(void);

namespace repoctx::py {
namespace {

const std::vector<const char*> kKindNames = {
    "module",
    "function_definition",
    "class_definition",
    "decorated_definition",
    "decorator",
    "block",
    "expression_statement",
    "assignment",
    "augmented_assignment",
    "identifier",
    "pattern_list",
    "tuple_pattern",
    "list_pattern",
    "list_splat_pattern",
    "attribute",
    "call",
    "argument_list",
    "keyword_argument",
    "list_splat",
    "dictionary_splat",
    "if_statement",
    "elif_clause",
    "else_clause",
    "for_statement",
    "while_statement",
    "try_statement",
    "except_clause",
    "except_group_clause",
    "finally_clause",
    "with_statement",
    "match_statement",
    "case_clause",
    "import_statement",
    "import_from_statement",
    "future_import_statement",
    "aliased_import",
    "dotted_name",
    "relative_import",
    "import_prefix",
    "wildcard_import",
    "string",
    "concatenated_string",
    "comment",
    "parameters",
    "typed_parameter",
    "default_parameter",
    "typed_default_parameter",
    "dictionary_splat_pattern",
    "keyword_separator",
    "positional_separator",
    "lambda",
    "lambda_parameters",
    "global_statement",
    "nonlocal_statement",
    "named_expression",
    "for_in_clause",
    "with_item",
    "as_pattern",
    "as_pattern_target",
    "parenthesized_expression",
    "ERROR",
    "string_start",
    "string_content",
    "escape_sequence",
    "case_pattern",
    "tuple",
    "list",
    "with_clause",
    "delete_statement",
    "type_alias_statement",
    "interpolation",
    "subscript",
    "generator_expression",
    "_block_end_marker_unused",
    ":",
    "async",
    "type_parameter",
    "line_continuation",
};

}  // namespace

Grammar::Grammar() : lang(tree_sitter_python()), kinds(lang, kKindNames) {}

const Grammar& grammar() {
  static const Grammar g;
  return g;
}

}  // namespace repoctx::py
