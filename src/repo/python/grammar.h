// tree-sitter-python's node kinds and field ids as this extractor uses them, resolved once per process
// (internal to src/repo: the Python extractor's parts share it).
#pragma once

#include <tree_sitter/api.h>

#include <cstring>

#include "repo/ts_util.h"

namespace repoctx::py {

// Node kinds the extractor distinguishes; everything else is walked generically.
enum K : int {
  k_module,
  k_function_definition,
  k_class_definition,
  k_decorated_definition,
  k_decorator,
  k_block,
  k_expression_statement,
  k_assignment,
  k_augmented_assignment,
  k_identifier,
  k_pattern_list,
  k_tuple_pattern,
  k_list_pattern,
  k_list_splat_pattern,
  k_attribute,
  k_call,
  k_argument_list,
  k_keyword_argument,
  k_list_splat,
  k_dictionary_splat,
  k_if_statement,
  k_elif_clause,
  k_else_clause,
  k_for_statement,
  k_while_statement,
  k_try_statement,
  k_except_clause,
  k_except_group_clause,
  k_finally_clause,
  k_with_statement,
  k_match_statement,
  k_case_clause,
  k_import_statement,
  k_import_from_statement,
  k_future_import_statement,
  k_aliased_import,
  k_dotted_name,
  k_relative_import,
  k_import_prefix,
  k_wildcard_import,
  k_string,
  k_concatenated_string,
  k_comment,
  k_parameters,
  k_typed_parameter,
  k_default_parameter,
  k_typed_default_parameter,
  k_dictionary_splat_pattern,
  k_keyword_separator,
  k_positional_separator,
  k_lambda,
  k_lambda_parameters,
  k_global_statement,
  k_nonlocal_statement,
  k_named_expression,
  k_for_in_clause,
  k_with_item,
  k_as_pattern,
  k_as_pattern_target,
  k_parenthesized_expression,
  k_ERROR,
  k_string_start,
  k_string_content,
  k_escape_sequence,
  k_case_pattern,
  k_tuple,
  k_list,
  k_with_clause,
  k_delete_statement,
  k_type_alias_statement,
  k_interpolation,
  k_subscript,
  k_generator_expression,
  k_block_end_marker,
  k_colon,
  k_async,
  k_type_parameter,
  k_line_continuation,
  k_count
};

struct Grammar {
  Grammar();
  const TSLanguage* lang;
  ts::KindTable kinds;
  TSFieldId f_name = field("name"), f_body = field("body"), f_left = field("left"), f_right = field("right"),
            f_type = field("type"), f_function = field("function"), f_arguments = field("arguments"),
            f_object = field("object"), f_attribute = field("attribute"), f_superclasses = field("superclasses"),
            f_parameters = field("parameters"), f_return_type = field("return_type"),
            f_module_name = field("module_name"), f_value = field("value"), f_alias = field("alias"),
            f_consequence = field("consequence"), f_alternative = field("alternative"),
            f_definition = field("definition"), f_condition = field("condition"),
            f_type_parameters = field("type_parameters");
  TSFieldId field(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
};
const Grammar& grammar();

}  // namespace repoctx::py
