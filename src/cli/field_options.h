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
#include <string>
#include <type_traits>
#include <vector>

#include "api/json.h"

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

}  // namespace repoctx
