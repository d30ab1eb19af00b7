// `acr`: AutoCodeRover's context retrieval as the context-retrieval study ran it ("ACR (custom)").
//
// Stage 1, search: the model reads the request and the search APIs and answers in free text; a proxy call
// extracts API calls and bug locations from that answer as JSON (schema-constrained; a usable extraction is
// retried up to acr_max_tries times with the reason it was not). The search ends when the model gives bug
// locations and no API calls, and every location is found in the code; otherwise the API calls run, their
// results go back with a request to analyse them, and the next round asks for more calls or the locations
// (at most acr_max_rounds rounds).
// Stage 2, context: each final bug location is looked up as ACR does (method in class, method in file, class
// in file, the whole class, the method anywhere; the first lookup that finds something wins) and the code it
// returns is the gathered context.
#include <fmt/core.h>
#include <re2/re2.h>

#include "llm/metered.h"
#include "llm/prompts.h"
#include "llm/structured.h"
#include "retrieve/study/context.h"
#include "retrieve/study/strategies.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

namespace {

struct BugLocation {
  std::string file, klass, method;
  json to_json() const { return {{"file", file}, {"class", klass}, {"method", method}}; }
};

struct ApiCall {
  std::string api;
  std::vector<std::string> args;
  std::string text() const {
    std::string s = api + "(";
    for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + json(args[i]).dump();
    return s + ")";
  }
};

struct Extraction {
  std::vector<ApiCall> calls;
  std::vector<BugLocation> locations;
};

// ACR's prepare_issue_prompt: markdown comments removed, every line stripped, blank lines dropped.
std::string clean_issue(const std::string& raw) {
  std::string text = raw;
  static const RE2 comments("(?s)<!--.*?-->");
  RE2::GlobalReplace(&text, comments, "");
  std::string out;
  for (auto line : split_lines(text)) {
    auto t = trim(line);
    if (t.empty()) continue;
    out += std::string(t) + "\n";
  }
  if (!out.empty()) out.pop_back();
  return out;
}

std::string api_lines() {
  std::string out;
  for (const auto& [api, args] : AcrSearch::apis()) out += "- " + api + "(" + join(args, ", ") + ")\n";
  return out;
}

class AcrProcedure {
 public:
  AcrProcedure(const Engine& e, LlmBackend& llm, const StudyParams& p)
      : e_(e), llm_(llm), p_(p), s_(e, acr_options(p)) {}

  RetrievalResult run(const std::string& request);

 private:
  std::string say(const std::string& purpose, int max_tokens);
  std::optional<Extraction> proxy(const std::string& text, json& tj);
  std::string validate(const json& j, Extraction& out) const;
  bool check_locations(const std::vector<BugLocation>& locs, json& tj);
  std::string run_calls(const std::vector<ApiCall>& calls, json& tj);
  AcrAnswer lookup(const BugLocation& b) const;
  json schema() const;

  const Engine& e_;
  LlmBackend& llm_;
  StudyParams p_;
  AcrSearch s_;
  std::vector<ChatMessage> msgs_;
};

std::string AcrProcedure::say(const std::string& purpose, int max_tokens) {
  throw_if_interrupted("LLM answers so far are cached; re-run to resume");
  GenerateRequest r;
  r.purpose = purpose;
  r.messages = msgs_;
  r.max_tokens = max_tokens;
  std::string text = sanitize_utf8(first_text(llm_.generate(r)));
  msgs_.push_back({"assistant", text});
  return text;
}

json AcrProcedure::schema() const {
  std::vector<std::string> names;
  for (const auto& a : AcrSearch::apis()) names.push_back(a.first);
  json str = {{"type", "string"}, {"maxLength", p_.react.string_arg_chars}};
  json call = {
      {"type", "object"},
      {"properties", {{"api", {{"enum", names}}}, {"arguments", {{"type", "array"}, {"items", str}, {"maxItems", 3}}}}},
      {"required", {"api", "arguments"}},
      {"additionalProperties", false}};
  json loc = {{"type", "object"},
              {"properties", {{"file", str}, {"class", str}, {"method", str}}},
              {"required", {"file", "class", "method"}},
              {"additionalProperties", false}};
  return {{"type", "object"},
          {"properties",
           {{"API_calls", {{"type", "array"}, {"items", call}, {"maxItems", p_.acr_max_calls}}},
            {"bug_locations", {{"type", "array"}, {"items", loc}, {"maxItems", p_.acr_max_locations}}}}},
          {"required", {"API_calls", "bug_locations"}},
          {"additionalProperties", false}};
}

// ACR's is_valid_response: calls must name an API with the right number of arguments; without calls, the
// bug locations must be there and each name a class or a method. "" when valid.
std::string AcrProcedure::validate(const json& j, Extraction& out) const {
  const json calls = j.value("API_calls", json::array());
  const json locs = j.value("bug_locations", json::array());
  if (!calls.is_array() || !locs.is_array()) return "API_calls and bug_locations must be lists";
  for (const auto& c : calls) {
    if (!c.is_object() || !c.value("api", json()).is_string()) return "Every API call must name an api";
    ApiCall ac{c["api"].get<std::string>(), {}};
    for (const auto& a : c.value("arguments", json::array()))
      ac.args.push_back(a.is_string() ? a.get<std::string>() : a.dump());
    auto it = std::find_if(AcrSearch::apis().begin(), AcrSearch::apis().end(),
                           [&](const auto& p) { return p.first == ac.api; });
    if (it == AcrSearch::apis().end()) return "the API call '" + ac.text() + "' calls a non-existent function";
    if (it->second.size() != ac.args.size()) return "the API call '" + ac.text() + "' has wrong number of arguments";
    out.calls.push_back(ac);
  }
  for (const auto& l : locs) {
    if (!l.is_object()) return "Every bug location must be an object";
    out.locations.push_back({json_string(l, "file"), json_string(l, "class"), json_string(l, "method")});
  }
  if (out.calls.empty()) {
    if (out.locations.empty()) return "Both API_calls and bug_locations are empty";
    for (const auto& b : out.locations)
      if (trim(b.klass).empty() && trim(b.method).empty()) return "Bug location not detailed enough";
  }
  return "";
}

std::optional<Extraction> AcrProcedure::proxy(const std::string& text, json& tj) {
  static const PromptTemplate t = load_prompt("acr_proxy");
  static const PromptTemplate retry = load_prompt("acr_proxy_retry");
  auto ms = render_prompt(t, {{"apis", api_lines()}, {"text", text}});
  json tries = json::array();
  for (int i = 0; i < p_.acr_max_tries; ++i) {
    StructuredAnswer a = ask_json(llm_, {"acr_proxy", ms, schema(), p_.acr_proxy_tokens});
    ms.push_back({"assistant", sanitize_utf8(a.text)});
    Extraction ex;
    std::string why = a.ok() ? validate(*a.value, ex) : a.error;
    tries.push_back(why.empty() ? json("ok") : json(why));
    if (why.empty()) {
      tj["proxy"] = tries;
      return ex;
    }
    ms.push_back({"user", render_text(retry.user, {{"diagnosis", why}}, retry.name)});
  }
  tj["proxy"] = tries;
  return std::nullopt;
}

AcrAnswer AcrProcedure::lookup(const BugLocation& b) const {
  // ACR's search_for_bug_location: the most specific lookup the location allows, falling back to the next
  // one while nothing is found.
  std::string m(trim(b.method)), k(trim(b.klass)), f(trim(b.file));
  AcrAnswer a;
  if (!m.empty() && !k.empty() && (a = s_.search_method_in_class(m, k)).ok) return a;
  if (!m.empty() && !f.empty() && (a = s_.search_method_in_file(m, f)).ok) return a;
  if (!k.empty() && !f.empty() && (a = s_.search_class_in_file(k, f)).ok) return a;
  if (!k.empty() && (a = s_.get_class_full_snippet(k)).ok) return a;
  if (!m.empty() && (a = s_.search_method(m)).ok) return a;
  if (a.text.empty()) a.text = "Could not find the bug location " + b.to_json().dump();
  return a;
}

bool AcrProcedure::check_locations(const std::vector<BugLocation>& locs, json& tj) {
  bool all = true;
  json found = json::array();
  for (const auto& b : locs) {
    bool ok = (!trim(b.klass).empty() || !trim(b.method).empty()) && lookup(b).ok;
    found.push_back(ok);
    all = all && ok;
  }
  tj["locations_found"] = found;
  return all;
}

std::string AcrProcedure::run_calls(const std::vector<ApiCall>& calls, json& tj) {
  std::string out;
  json cj = json::array();
  for (const auto& c : calls) {
    AcrAnswer a = s_.call(c.api, c.args);
    std::string text = a.text;
    if (text.size() > static_cast<size_t>(p_.react.tool_output_chars))
      text = text.substr(0, static_cast<size_t>(p_.react.tool_output_chars)) + "\n[output cut]";
    out += "Result of " + c.text() + ":\n" + text + "\n";
    cj.push_back({{"call", c.text()}, {"ok", a.ok}, {"output_chars", a.text.size()}});
  }
  tj["calls"] = cj;
  return out;
}

RetrievalResult AcrProcedure::run(const std::string& request) {
  static const PromptTemplate sys = load_prompt("acr_system"), issue = load_prompt("acr_issue"),
                              select = load_prompt("acr_select"), analyze = load_prompt("acr_analyze"),
                              again = load_prompt("acr_analyze_select"), imprecise = load_prompt("acr_imprecise"),
                              invalid = load_prompt("acr_invalid");
  msgs_ = render_prompt(sys, {});
  for (auto& m : render_prompt(issue, {{"issue", clean_issue(request)}})) msgs_.push_back(m);
  std::string next = render_text(select.user, {{"apis", api_lines()}}, select.name);
  json rounds = json::array();
  std::vector<BugLocation> final_locations;
  std::string stop = "round_limit";
  for (int round = 1; round <= p_.acr_max_rounds; ++round) {
    json tj = {{"round", round}};
    std::optional<Extraction> ex;
    for (int t = 0; t < p_.acr_max_tries && !ex; ++t) {
      msgs_.push_back({"user", next});
      next = again.user;
      std::string answer = say("acr_select", p_.acr_answer_tokens);
      ex = proxy(answer, tj);
      if (!ex) msgs_.push_back({"user", invalid.user});
    }
    if (!ex) {
      tj["unusable"] = true;
      rounds.push_back(tj);
      continue;
    }
    json calls = json::array(), locs = json::array();
    for (const auto& c : ex->calls) calls.push_back(c.text());
    for (const auto& b : ex->locations) locs.push_back(b.to_json());
    tj["api_calls"] = calls;
    tj["bug_locations"] = locs;
    final_locations = ex->locations;
    bool sufficient = ex->calls.empty() && !ex->locations.empty();
    if (!ex->locations.empty() && !check_locations(ex->locations, tj)) {
      msgs_.push_back({"user", imprecise.user});
      sufficient = false;
    }
    if (sufficient) {
      rounds.push_back(tj);
      stop = "bug_locations";
      break;
    }
    if (!ex->calls.empty()) {
      msgs_.push_back({"user", run_calls(ex->calls, tj)});
      msgs_.push_back({"user", analyze.user});
      say("acr_analyze", p_.acr_answer_tokens);
    }
    rounds.push_back(tj);
  }
  // Stage 2: the final bug locations' code is the context.
  GatheredContext ctx(study_corpus(e_, p_.corpus), token_counter_named(p_.tokenizer));
  json resolved = json::array();
  for (const auto& b : final_locations) {
    AcrAnswer a = lookup(b);
    for (const auto& r : a.results) ctx.add(r.file, r.start, r.end);
    resolved.push_back({{"location", b.to_json()}, {"found", a.ok}, {"ranges", a.results.size()}});
  }
  RetrievalResult res;
  res.hits = ctx.hits();
  res.trace = {{"strategy", "acr"},       {"params", p_.to_json()},    {"stop_reason", stop},
               {"rounds", rounds},        {"bug_locations", resolved}, {"context_tokens", ctx.tokens()},
               {"context", ctx.to_json()}};
  return res;
}

class AcrRetriever : public Retriever {
 public:
  AcrRetriever(const Engine& e, LlmBackend& llm, const RetrieverOptions& o) : e_(e), llm_(llm), p_(o.study) {}
  std::string name() const override { return "acr"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }
  RetrievalResult run(const RetrievalQuery& q) override {
    if (trim(q.text).empty()) throw Error(ExitCode::usage, "the acr strategy needs the request as --query text");
    MeteredBackend metered(llm_);
    AcrProcedure proc(e_, metered, p_);
    RetrievalResult r = proc.run(q.text);
    r.usage = metered.usage();
    r.trace["llm_usage"] = r.usage.to_json();
    return r;
  }

 private:
  const Engine& e_;
  LlmBackend& llm_;
  StudyParams p_;
};

}  // namespace

std::unique_ptr<Retriever> make_acr(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<AcrRetriever>(e, m.need_llm("the acr strategy"), o);
}

}  // namespace repoctx
