// CLI options made from the API's field declarations (api/json.h), so that a parameter has one name, one
// meaning, one range and one default on the command line, over HTTP and MCP, in Python and in
// docs/PARAMETERS.md. Range and choice checks are CLI11 validators built from the same bounds the JSON
// reader enforces.
#pragma once

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "api/json.h"
#include "util/param_table.h"

namespace repoctx {

// The check of a numeric field's bounds, worded as the JSON reader words it ("must be between 1 and 10000").
inline CLI::Validator field_range(double lo, double hi, bool integer) {
  return CLI::Validator(
      [lo, hi, integer](std::string& s) -> std::string {
        const char* b = s.c_str();
        char* end = nullptr;
        double v = std::strtod(b, &end);
        if (end == b || *end != '\0' || !std::isfinite(v)) return fmt::format("'{}' is not a number", s);
        if (integer && std::floor(v) != v) return fmt::format("'{}' must be an integer", s);
        if (v < lo || v > hi) return fmt::format("{} must be between {} and {}", s, lo, hi);
        return {};
      },
      fmt::format("in [{} - {}]", lo, hi));
}

// Adds one option per field of `fields` (except those in `skip` and those not on the CLI) writing into `p`,
// under the help group `group`. A map field takes NAME=VALUE, repeatable.
template <class P>
void add_field_options(CLI::App* c, P& p, const std::vector<api::Field<P>>& fields, const std::string& group,
                       const std::set<std::string>& skip = {}) {
  for (const auto& f : fields) {
    std::string name = api::cli_spelling(f);
    if (name.empty() || skip.count(f.name)) continue;
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(p.*member)>;
          CLI::Option* o = nullptr;
          if constexpr (std::is_same_v<T, bool>) {
            o = c->add_flag(name, p.*member, f.description);
          } else if constexpr (std::is_same_v<T, std::string>) {
            o = c->add_option(name, p.*member, f.description);
            if (!f.choices.empty()) o->check(CLI::IsMember(f.choices));
            if (!(p.*member).empty()) o->capture_default_str();
          } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, double>) {
            o = c->add_option(name, p.*member, f.description)->capture_default_str();
            if (f.min > -1e299 || f.max < 1e299) o->check(field_range(f.min, f.max, std::is_same_v<T, int>));
          } else {
            auto* target = &(p.*member);
            o = c->add_option_function<std::vector<std::string>>(
                name,
                [target, field = f.name](const std::vector<std::string>& kvs) {
                  for (const auto& kv : kvs) {
                    auto eq = kv.find('=');
                    if (eq == std::string::npos || eq == 0)
                      throw CLI::ValidationError(field, "expected NAME=VALUE, got '" + kv + "'");
                    (*target)[kv.substr(0, eq)] = kv.substr(eq + 1);
                  }
                },
                f.description + " (NAME=VALUE, repeatable)");
          }
          o->group(group);
        },
        f.member);
  }
}

// Adds the option `flag` for the strategy parameter `name` of a parameter table (util/param_table.h), with
// the table's meaning, range and choices: the same declaration `--param NAME=VALUE` and the API's params
// read. Throws std::logic_error when the table has no such parameter (a programming error).
template <class P>
CLI::Option* add_param_option(CLI::App* c, P& p, const ParamTable<P>& table, const std::string& name,
                              const std::string& flag) {
  for (const auto& row : table) {
    if (name != row.name) continue;
    const ParamDoc& d = row.doc;
    return std::visit(
        [&](auto* field) -> CLI::Option* {
          using T = std::remove_pointer_t<decltype(field)>;
          CLI::Option* o = c->add_option(flag, *field, d.meaning)->capture_default_str();
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            if (d.min > -1e299 || d.max < 1e299) o->check(field_range(d.min, d.max, std::is_integral_v<T>));
          } else if constexpr (std::is_same_v<T, std::string>) {
            if (d.choices[0] != '\0') {
              std::vector<std::string> choices;
              std::string all = d.choices;
              for (size_t start = 0;;) {
                size_t bar = all.find('|', start);
                choices.push_back(all.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
                if (bar == std::string::npos) break;
                start = bar + 1;
              }
              o->check(CLI::IsMember(choices));
            }
          }
          return o;
        },
        row.ref(p));
  }
  throw std::logic_error("no parameter '" + name + "' in the table");
}

}  // namespace repoctx
