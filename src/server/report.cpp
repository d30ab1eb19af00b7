#include "server/report.h"

#include <fmt/core.h>

#include <set>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/text.h"

using nlohmann::json;

namespace repoctx {

namespace {

// The page's style and behaviour, inline (the page must open without network). The script only sorts tables
// and folds/unfolds; every section is rendered server-side, so the page reads the same without it.
constexpr std::string_view kStyle = R"CSS(
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 1.2em 3em;color:#1d1d1f}
header{border-bottom:2px solid #445;margin-bottom:1em}h1{font-size:1.5em;margin:.6em 0 .2em}
h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccd}h3{font-size:1.02em;margin:1.2em 0 .4em}
nav a{margin-right:.9em}table{border-collapse:collapse;margin:.4em 0 1em;width:100%}
th,td{border:1px solid #d4d4dc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#eef0f6;cursor:pointer;white-space:nowrap}th.sorted-asc::after{content:" \25B2"}
th.sorted-desc::after{content:" \25BC"}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;background:#f7f7fa;padding:4px}
details>summary{cursor:pointer;color:#335}.muted{color:#777}.yes{color:#0a6b2d}.no{color:#a3141e}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:600}dd{margin:0}
.toolbar button{margin-right:.5em}
)CSS";

constexpr std::string_view kScript = R"JS(
'use strict';
function cellValue(td) {
  const t = td.textContent.trim();
  const n = Number(t);
  return t !== '' && !Number.isNaN(n) ? n : t.toLowerCase();
}
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('thead th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      const asc = !th.classList.contains('sorted-asc');
      table.querySelectorAll('thead th').forEach(function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
      th.classList.add(asc ? 'sorted-asc' : 'sorted-desc');
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort(function (a, b) {
        const x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
        if (x === y) return 0;
        if (typeof x === typeof y) return (x < y ? -1 : 1) * (asc ? 1 : -1);
        return (typeof x === 'number' ? -1 : 1) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
function setAll(open) { document.querySelectorAll('details').forEach(function (d) { d.open = open; }); }
document.getElementById('unfold-all').addEventListener('click', function () { setAll(true); });
document.getElementById('fold-all').addEventListener('click', function () { setAll(false); });
)JS";

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  if (v.is_null()) return "";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A long or multi-line text folds behind its first line.
std::string folded(const std::string& s, size_t keep = 100) {
  if (s.size() <= keep && s.find('\n') == std::string::npos) return esc(s);
  std::string head = s.substr(0, std::min(s.find('\n'), keep));
  return "<details><summary>" + esc(head) + " &hellip;</summary><pre>" + esc(s) + "</pre></details>";
}

std::string cell(const json& v);

// Arrays of objects become sortable tables (one column per key seen); other arrays, lists.
std::string table(const json& rows, std::vector<std::string> cols = {}) {
  if (!rows.is_array() || rows.empty()) return "<p class=\"muted\">none</p>";
  if (cols.empty()) {
    std::set<std::string> seen;
    for (const auto& r : rows)
      if (r.is_object())
        for (const auto& [k, v] : r.items())
          if (seen.insert(k).second) cols.push_back(k);
  }
  if (cols.empty()) {
    std::string out = "<ol>";
    for (const auto& r : rows) out += "<li>" + cell(r) + "</li>";
    return out + "</ol>";
  }
  std::string out = "<table class=\"sortable\"><thead><tr>";
  for (const auto& c : cols) out += "<th>" + esc(c) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    out += "<tr>";
    for (const auto& c : cols) {
      const json v = r.is_object() && r.contains(c) ? r[c] : json();
      out += v.is_number() ? "<td class=\"num\">" + cell(v) + "</td>" : "<td>" + cell(v) + "</td>";
    }
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

std::string dl(const json& obj, const std::set<std::string>& skip = {}) {
  if (!obj.is_object() || obj.empty()) return "<p class=\"muted\">none</p>";
  std::string out = "<dl>";
  for (const auto& [k, v] : obj.items())
    if (!skip.count(k)) out += "<dt>" + esc(k) + "</dt><dd>" + cell(v) + "</dd>";
  return out + "</dl>";
}

std::string cell(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "<span class=\"yes\">yes</span>" : "<span class=\"no\">no</span>";
  if (v.is_array()) {
    if (v.empty()) return "";
    return "<details><summary>" + std::to_string(v.size()) + " item" + (v.size() == 1 ? "" : "s") + "</summary>" +
           table(v) + "</details>";
  }
  if (v.is_object())
    return "<details><summary>" + std::to_string(v.size()) + " fields</summary>" + dl(v) + "</details>";
  return folded(text_of(v));
}

// Page assembly: sections in order, each listed in the navigation.
class Page {
 public:
  void section(const std::string& id, const std::string& title, const std::string& body) {
    nav_ += "<a href=\"#" + id + "\">" + esc(title) + "</a>";
    body_ += "<section id=\"" + id + "\"><h2>" + esc(title) + "</h2>" + body + "</section>\n";
  }
  std::string html(const std::string& title, const std::string& subtitle) const {
    return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
           "script-src 'unsafe-inline'; img-src data:\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" +
           esc(title) + "</title><style>" + std::string(kStyle) + "</style></head><body><header><h1>" + esc(title) +
           "</h1><p class=\"muted\">" + esc(subtitle) + "</p><nav>" + nav_ +
           "</nav><p class=\"toolbar\"><button id=\"unfold-all\" type=\"button\">unfold all</button>"
           "<button id=\"fold-all\" type=\"button\">fold all</button></p></header>\n<main>" +
           body_ + "</main><script>" + std::string(kScript) + "</script></body></html>\n";
  }

 private:
  std::string nav_, body_;
};

json usage_rows(const json& usage) {
  json rows = json::array();
  if (!usage.is_object()) return rows;
  for (const auto& [stage, r] : usage.items()) {
    json row = {{"stage", stage}};
    if (r.is_object())
      for (const auto& [k, v] : r.items()) row[k] = v;
    rows.push_back(row);
  }
  return rows;
}

json context_step_rows(const json& decompositions) {
  json rows = json::array();
  for (const auto& d : decompositions) {
    if (d.contains("error")) rows.push_back({{"function", d.value("function", "")}, {"error", d["error"]}});
    int n = 0;
    for (const auto& s : d.value("steps", json::array())) {
      const json v = s.value("validation", json::object());
      rows.push_back({{"function", d.value("function", "")},
                      {"step", n++},
                      {"description", s.value("description", "")},
                      {"description verdict", v.value("description", "")},
                      {"rouge", v.value("rouge", json())},
                      {"judge reason", v.value("judge_reason", "")},
                      {"snippet verdict", v.value("snippet", "")},
                      {"grounded", s.value("grounded", false)},
                      {"rejected because", v.value("rejected", "")},
                      {"snippet", s.value("snippet", "")}});
    }
  }
  return rows;
}

// Per round and target step, one stage of the search (seeds, agent, expansion), as "round r, step s" blocks.
template <class F>
std::string per_step(const json& rounds, F&& render) {
  std::string out;
  for (const auto& r : rounds) {
    for (const auto& ts : r.value("target_steps", json::array())) {
      std::string body = render(ts);
      if (body.empty()) continue;
      out += fmt::format("<h3>round {}, target step {}</h3><p>{}</p>", text_of(r.value("round", json())),
                         text_of(ts.value("step", json())), folded(ts.value("description", ""), 200));
      out += body;
    }
  }
  return out.empty() ? "<p class=\"muted\">no plan-confirmation round ran</p>" : out;
}

std::string agent_block(const json& ts) {
  if (!ts.contains("agent") && !ts.contains("proposals")) return "";
  std::string out;
  if (ts.contains("agent")) out += dl(ts["agent"], {"turns"});
  if (ts.contains("agent") && ts["agent"].contains("turns")) out += "<h4>tool calls</h4>" + table(ts["agent"]["turns"]);
  out += "<h4>proposals</h4>" + table(ts.value("proposals", json::array()));
  return out;
}

void retrieval_sections(Page& page, const json& t, const std::string& prefix, std::set<std::string>& shown) {
  auto id = [&](const char* s) { return prefix + s; };
  json target = t.value("target_decomposition", json::object());
  page.section(id("target"), "Target",
               "<p><b>" + esc(text_of(t.value("target", json()))) + "</b></p>" +
                   (target.contains("error") ? "<p class=\"no\">" + esc(text_of(target["error"])) + "</p>" : "") +
                   table(target.value("steps", json::array())));
  page.section(id("context-steps"), "Context steps and their validation",
               "<p>" + esc(text_of(t.value("grounded_context_steps", json()))) + " grounded steps</p>" +
                   table(context_step_rows(t.value("decompositions", json::array()))));
  page.section(id("selection"), "Function selection and subspace",
               "<h3>selected files</h3>" + table(t.value("function_selection", json::array())) + "<h3>subspace</h3>" +
                   dl(t.value("subspace", json::object())) + "<h3>mean and first principal component</h3>" +
                   dl(t.value("mu_pc1", json::object())));
  const json rounds = t.value("rounds", json::array());
  std::string note = t.contains("note") ? "<p class=\"muted\">" + esc(text_of(t["note"])) + "</p>" : "";
  page.section(id("seeds"), "Initial seeds", note + per_step(rounds, [](const json& ts) {
                                               return ts.contains("initial_seeds") ? table(ts["initial_seeds"])
                                                                                   : std::string();
                                             }));
  page.section(id("agent"), "Agent tool calls and proposals", per_step(rounds, agent_block));
  page.section(id("expansion"), "Seed expansion and verification", per_step(rounds, [](const json& ts) {
                 if (!ts.contains("expansion") && !ts.contains("verification")) return std::string();
                 return dl(ts.value("expansion", json::object())) + table(ts.value("verification", json::array()));
               }));
  std::string conf;
  for (const auto& r : rounds) {
    conf += "<h3>round " + esc(text_of(r.value("round", json()))) + "</h3>" +
            table(r.value("plan_confirmation", json::array()));
    if (r.contains("plan_confirmation_error"))
      conf += "<p class=\"no\">" + esc(text_of(r["plan_confirmation_error"])) + "</p>";
  }
  page.section(id("confirmation"), "Plan confirmation", conf.empty() ? "<p class=\"muted\">no round ran</p>" : conf);
  page.section(id("final-context"), "Final context", table(t.value("final_context", json::array())));
  page.section(id("llm-usage"), "LLM usage by stage",
               table(usage_rows(t.value("llm_usage", json::object()))) +
                   dl(json{{"seconds", t.value("seconds", json())},
                           {"llm_seconds", t.value("llm_seconds", json())},
                           {"non_llm_seconds", t.value("non_llm_seconds", json())}}));
  page.section(id("params"), "Parameters", dl(t.value("params", json::object())));
  for (const char* k : {"target", "target_decomposition", "grounded_context_steps", "decompositions",
                        "function_selection", "subspace", "mu_pc1", "rounds", "note", "final_context", "llm_usage",
                        "seconds", "llm_seconds", "non_llm_seconds", "params"})
    shown.insert(k);
}

void generation_sections(Page& page, const json& t, std::set<std::string>& shown) {
  page.section(
      "target", "Target",
      "<p><b>" + esc(text_of(t.value("target", json()))) + "</b></p>" +
          (t.contains("target_decomposition_error") ? "<p>" + folded(text_of(t["target_decomposition_error"])) + "</p>"
                                                    : ""));
  page.section("plan", "Plan (target steps)", table(t.value("steps", json::array())));
  page.section("final-context", "Contexts in the prompt", table(t.value("prompt_contexts", json::array())));
  json rounds = json::array();
  int n = 0;
  for (const auto& r : t.value("rounds", json::array()))
    rounds.push_back({{"round", n++},
                      {"purpose", r.value("purpose", "")},
                      {"cached", r.value("cached", false)},
                      {"findings", r.value("findings", json::array()).size()},
                      {"answer", r.value("answer", "")},
                      {"static-check findings", r.value("findings", json::array())}});
  page.section("rounds", "Generation and refinement rounds", table(rounds));
  page.section("findings", "Findings left after the last round", table(t.value("remaining_findings", json::array())));
  page.section("llm-usage", "LLM usage by stage", table(usage_rows(t.value("llm_usage", json::object()))));
  page.section("params", "Parameters", dl(t.value("params", json::object())));
  for (const char* k : {"target", "target_decomposition_error", "steps", "prompt_contexts", "rounds",
                        "remaining_findings", "llm_usage", "params", "procedural"})
    shown.insert(k);
  if (t.contains("procedural") && t["procedural"].is_object()) {
    std::set<std::string> inner;
    retrieval_sections(page, t["procedural"], "procedural-", inner);
  }
}

}  // namespace

TraceKind trace_kind(const json& t) {
  if (!t.is_object())
    throw Error(ExitCode::bad_input,
                "the trace must be a JSON object (written by retrieve --trace or generate --trace)");
  if (t.contains("prompt_contexts") || t.contains("remaining_findings")) return TraceKind::generation;
  if (t.contains("decompositions") || t.contains("target_decomposition")) return TraceKind::retrieval;
  throw Error(ExitCode::bad_input,
              "not a repoctx trace: expected the fields of a retrieval trace (decompositions, target_decomposition) or "
              "of a generation trace (prompt_contexts, remaining_findings); write one with `retrieve --strategy "
              "procedural --trace FILE` or `generate --trace FILE`");
}

std::string render_report(const json& trace, const std::string& source_name) {
  TraceKind kind = trace_kind(trace);
  Page page;
  std::set<std::string> shown;
  std::string target = text_of(trace.value("target", json()));
  if (kind == TraceKind::retrieval)
    retrieval_sections(page, trace, "", shown);
  else
    generation_sections(page, trace, shown);
  json other = json::object();
  for (const auto& [k, v] : trace.items())
    if (!shown.count(k)) other[k] = v;
  page.section("other", "Other trace fields", dl(other));
  std::string title = std::string(kind == TraceKind::retrieval ? "Procedural retrieval" : "Generation") + ": " + target;
  return page.html(title, "repoctx report of " + source_name);
}

}  // namespace repoctx
