#include "retrieve/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "index/derived_file.h"
#include "index/index.h"

#include "util/cancel.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/progress.h"
#include "util/text.h"

namespace repoctx {

Bm25Overrides TargetContext::entity_overrides() const {
  Bm25Overrides ov;
  ov.removed = removed_entities;
  if (target.entity >= 0) ov.replaced.emplace_back(target.entity, &target_terms);
  for (const auto& [e, tv] : ancestor_terms) ov.replaced.emplace_back(e, &tv);
  return ov;
}

Bm25Overrides TargetContext::snippet_overrides() const {
  Bm25Overrides ov;
  for (const auto& [s, tv] : snippet_terms) ov.replaced.emplace_back(s, &tv);
  return ov;
}

bool TargetContext::is_hidden_entity(int e) const {
  if (e == target.entity) return true;
  return std::binary_search(removed_entities.begin(), removed_entities.end(), e);
}

Engine::Engine(std::unique_ptr<RepoView> view) : view_(std::move(view)), graph_(*view_) {}

std::unique_ptr<Engine> Engine::open(const std::string& db_path) {
  return std::make_unique<Engine>(RepoView::open(db_path));
}

const Bm25Index& Engine::entity_bm25() const {
  std::call_once(entity_once_, [&] {
    if (const QueryImage* img = view_->image()) {  // the lists written at index time, mapped
      const RepoView* v = view_.get();
      entity_bm25_.attach(img->entity_postings(), [v](int d) -> const TermVec& { return v->entity_terms(d); });
      return;
    }
    view_->load_all_terms();
    std::vector<const TermVec*> docs(view_->entities().size());
    for (size_t i = 0; i < docs.size(); ++i) docs[i] = &view_->entity_terms(static_cast<int>(i));
    entity_bm25_.build(docs);
  });
  return entity_bm25_;
}

const Bm25Index& Engine::snippet_bm25() const {
  std::call_once(snippet_once_, [&] {
    if (const QueryImage* img = view_->image()) {
      const RepoView* v = view_.get();
      snippet_bm25_.attach(img->snippet_postings(), [v](int d) -> const TermVec& { return v->snippet_terms(d); });
      return;
    }
    view_->load_all_terms();
    std::vector<const TermVec*> docs(view_->snippets().size());
    for (size_t i = 0; i < docs.size(); ++i) docs[i] = &view_->snippet_terms(static_cast<int>(i));
    snippet_bm25_.build(docs);
  });
  return snippet_bm25_;
}

namespace {

// The signature corpus's term vectors are kept beside the index (index/derived_file.h): tokenizing every
// callable's signature and docstring was a third of a cold structural request on sympy. Payload: per callable
// entity in index order, u32 length, u32 terms, then (u64 term, u32 count) per term; named by the extractor's
// version (which covers the tokenizer and the signature block).
constexpr const char* kSignatureTermsFile = "signature-terms";
const std::string kSignatureTermsVersion = std::string(kExtractorVersion) + "/signature-terms-v1";

bool read_signature_terms(const RepoView& view, std::vector<TermVec>& out) {
  auto payload = read_derived_file(view, kSignatureTermsFile, kSignatureTermsVersion);
  if (!payload) return false;
  std::string_view in = *payload;
  const auto& ents = view.entities();
  for (size_t i = 0; i < ents.size(); ++i) {
    if (!is_callable(ents[i].kind)) continue;
    uint32_t head[2];
    if (in.size() < sizeof head) return false;
    std::memcpy(head, in.data(), sizeof head);
    in.remove_prefix(sizeof head);
    if (in.size() / 12 < head[1]) return false;
    out[i] = TermVec::deserialize(in.substr(0, size_t{head[1]} * 12), head[0]);
    in.remove_prefix(size_t{head[1]} * 12);
  }
  return in.empty();
}

void write_signature_terms(const RepoView& view, const std::vector<TermVec>& terms) {
  std::string out;
  const auto& ents = view.entities();
  for (size_t i = 0; i < ents.size(); ++i) {
    if (!is_callable(ents[i].kind)) continue;
    const uint32_t head[2] = {terms[i].length, static_cast<uint32_t>(terms[i].terms.size())};
    out.append(reinterpret_cast<const char*>(head), sizeof head);
    out += terms[i].serialize();
  }
  write_derived_file(view, kSignatureTermsFile, kSignatureTermsVersion, out);
}

}  // namespace

const Bm25Index& Engine::visible_bm25() const {
  std::call_once(visible_once_, [&] {
    const auto& ents = view_->entities();
    visible_terms_.assign(ents.size(), TermVec{});
    if (!read_signature_terms(*view_, visible_terms_)) {
      visible_terms_.assign(ents.size(), TermVec{});
      for (size_t i = 0; i < ents.size(); ++i)
        if (is_callable(ents[i].kind)) visible_terms_[i] = term_vector(entity_signature_block(ents[i]));
      write_signature_terms(*view_, visible_terms_);
    }
    std::vector<const TermVec*> docs(ents.size(), nullptr);
    for (size_t i = 0; i < ents.size(); ++i)
      if (is_callable(ents[i].kind)) docs[i] = &visible_terms_[i];
    visible_bm25_.build(docs);
  });
  return visible_bm25_;
}

const TermVec& Engine::visible_terms(int entity) const {
  visible_bm25();
  return visible_terms_[entity];
}

TargetRef Engine::resolve_target(const std::string& spec) const {
  size_t sep = spec.find("::");
  if (sep == std::string::npos)
    throw Error(ExitCode::usage, "target '" + spec + "' is not of the form path/to/file.py::Qualified.name");
  std::string path = spec.substr(0, sep), qual = spec.substr(sep + 2);
  while (starts_with(path, "./")) path = path.substr(2);
  auto f = view_->file_by_path(path);
  if (!f) {
    std::vector<std::pair<size_t, std::string>> close;
    for (const auto& fr : view_->files()) {
      if (ends_with(fr.path, "/" + path) || ends_with(path, "/" + fr.path))
        close.emplace_back(0, fr.path);
      else {
        std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
        if (ends_with(fr.path, base)) close.emplace_back(1, fr.path);
      }
    }
    std::sort(close.begin(), close.end());
    std::string hint;
    for (size_t i = 0; i < std::min<size_t>(3, close.size()); ++i) hint += (i ? ", " : "") + close[i].second;
    throw Error(ExitCode::not_found, "file '" + path + "' is not in the index" +
                                         (hint.empty() ? std::string(" (paths are relative to the repository root)")
                                                       : " (did you mean " + hint + "?)"));
  }
  auto ents = view_->find_entities(*f, qual);
  std::vector<int> callables;
  for (int e : ents)
    if (is_callable(view_->entities()[e].kind)) callables.push_back(e);
  if (callables.empty()) {
    std::vector<std::pair<size_t, std::string>> close;
    const FileRec& fr = view_->files()[*f];
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      const auto& e = view_->entities()[i];
      if (!is_callable(e.kind)) continue;
      close.emplace_back(edit_distance(e.qualname, qual, 64), e.qualname);  // beyond 64 edits: not "close"
    }
    std::sort(close.begin(), close.end());
    std::string hint;
    for (size_t i = 0; i < std::min<size_t>(3, close.size()); ++i) hint += (i ? ", " : "") + close[i].second;
    throw Error(ExitCode::not_found, "no function or method '" + qual + "' in " + path +
                                         (hint.empty() ? std::string() : " (closest: " + hint + ")"));
  }
  // A name defined twice (property setters, if/else variants): the last definition is the live one.
  return TargetRef{*f, callables.back()};
}

TargetContext Engine::make_context(const TargetRef& t) const {
  TargetContext c;
  c.target = t;
  c.hidden = HiddenBody{t.entity, t.file};
  const auto& ents = view_->entities();
  const EntityRec& te = ents[t.entity];
  const FileRec& f = view_->files()[t.file];
  const std::string& content = view_->content(t.file);
  c.masked_content = mask_body(content, te);
  for (int i = f.first_entity; i < f.first_entity + f.n_entities; ++i)
    if (i != t.entity && view_->is_within(i, t.entity)) c.removed_entities.push_back(i);
  auto starts = line_starts(c.masked_content);
  c.target_terms = term_vector(line_range(c.masked_content, starts, te.decorated_start_line, te.end_line));
  // Callables around a nested target contain its body in their own documents (classes do not: their
  // documents are skeletons of member signatures).
  for (int a = te.parent_index; a >= 0; a = ents[a].parent_index)
    if (!is_type(ents[a].kind)) {
      std::string doc(line_range(c.masked_content, starts, ents[a].decorated_start_line, ents[a].end_line));
      c.ancestor_terms.emplace_back(a, term_vector(doc));
      if (doc.size() > 4000) doc.resize(4000);
      c.ancestor_docs.emplace_back(a, std::move(doc));
    }
  if (te.body_start_line > 0) {
    for (int s = f.first_snippet; s < f.first_snippet + f.n_snippets; ++s) {
      const SnippetRec& sr = view_->snippets()[s];
      if (sr.end_line < te.body_start_line || sr.start_line > te.body_end_line) continue;
      c.snippet_terms.emplace_back(s, term_vector(line_range(c.masked_content, starts, sr.start_line, sr.end_line)));
    }
  }
  c.visible_text = entity_signature_block(te);
  return c;
}

std::string Engine::entity_document_text(int entity) const {
  const auto& ents = view_->entities();
  const EntityRec& e = ents[entity];
  const std::string& content = view_->content(e.file);
  auto starts = line_starts(content);
  std::vector<const Entity*> children;
  if (is_type(e.kind)) {
    const FileRec& f = view_->files()[e.file];
    for (int i = f.first_entity; i < f.first_entity + f.n_entities; ++i)
      if (ents[i].parent_index == entity) children.push_back(&ents[i]);
  }
  std::string doc = entity_document(e, children, content, starts);
  if (doc.size() > 4000) doc.resize(4000);  // embedding models read a few thousand tokens at most
  return doc;
}

static void normalise(std::vector<float>& v) {
  double n2 = 0;
  for (float x : v) n2 += static_cast<double>(x) * x;
  if (n2 <= 0) return;
  double inv = 1.0 / std::sqrt(n2);
  for (float& x : v) x = static_cast<float>(x * inv);
}

static std::vector<float> embed_one(LlmBackend& embedder, const std::string& text, EmbedTask task) {
  EmbedRequest r;
  r.texts = {text};
  r.task = task;
  auto v = embedder.embed(r).vectors.at(0);
  normalise(v);
  return v;
}

std::vector<float> Engine::embed_query(LlmBackend& embedder, const std::string& text) const {
  return embed_one(embedder, text, EmbedTask::query);
}

std::vector<float> Engine::embed_document(LlmBackend& embedder, const std::string& text) const {
  return embed_one(embedder, text, EmbedTask::document);
}

const std::vector<std::vector<float>>& Engine::entity_vectors(LlmBackend& embedder) const {
  std::lock_guard<std::mutex> lock(vectors_mu_);
  const std::string model = embedder.identity();
  if (auto it = entity_vectors_.find(model); it != entity_vectors_.end()) return it->second;
  const auto& ents = view_->entities();
  std::vector<std::string> docs(ents.size()), hashes(ents.size());
  for (size_t i = 0; i < ents.size(); ++i) {
    docs[i] = entity_document_text(static_cast<int>(i));
    hashes[i] = content_hash("document\x1f" + docs[i]);
  }
  EmbeddingStore store(view_->db_path());
  auto have = store.get(model, hashes);
  std::vector<size_t> missing;
  for (size_t i = 0; i < ents.size(); ++i)
    if (!have.count(hashes[i]) && !docs[i].empty()) missing.push_back(i);
  if (!missing.empty()) {
    log_info("embedding {} entity documents with {} (stored in the index: done once)", missing.size(), model);
    Progress prog("embedding", missing.size());
    const size_t batch = 32;
    for (size_t k = 0; k < missing.size(); k += batch) {
      throw_if_interrupted("the documents embedded so far are stored in the index");
      EmbedRequest r;
      r.task = EmbedTask::document;
      std::vector<size_t> idx(missing.begin() + static_cast<long>(k),
                              missing.begin() + static_cast<long>(std::min(missing.size(), k + batch)));
      for (size_t i : idx) r.texts.push_back(docs[i]);
      auto res = embedder.embed(r);
      std::vector<std::pair<std::string, std::vector<float>>> rows;
      for (size_t j = 0; j < idx.size(); ++j) {
        normalise(res.vectors[j]);
        have[hashes[idx[j]]] = res.vectors[j];
        rows.emplace_back(hashes[idx[j]], std::move(res.vectors[j]));
      }
      store.put(model, rows);  // each batch is kept even if a later one fails
      prog.add(idx.size());
    }
  }
  auto& out = entity_vectors_[model];
  out.resize(ents.size());
  for (size_t i = 0; i < ents.size(); ++i) {
    auto it = have.find(hashes[i]);
    if (it != have.end()) out[i] = it->second;
  }
  return out;
}

std::string Engine::entity_text(int entity) const {
  const auto& e = view_->entities()[entity];
  const std::string& content = view_->content(e.file);
  auto starts = line_starts(content);
  return std::string(line_range(content, starts, e.decorated_start_line, e.end_line));
}

std::string Engine::snippet_text(int snippet) const {
  const auto& s = view_->snippets()[snippet];
  const std::string& content = view_->content(s.file);
  auto starts = line_starts(content);
  return std::string(line_range(content, starts, s.start_line, s.end_line));
}

std::string Engine::target_name(int entity) const {
  const auto& e = view_->entities()[entity];
  return view_->files()[e.file].path + "::" + e.qualname;
}

}  // namespace repoctx
