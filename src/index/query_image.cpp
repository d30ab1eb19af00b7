#include "index/query_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/core.h>

#include "index/repo_view.h"
#include "index/schema.h"
#include "util/error.h"
#include "util/log.h"

namespace repoctx {

namespace {

constexpr char kMagic[8] = {'R', 'C', 'T', 'X', 'I', 'M', 'G', '1'};
constexpr uint32_t kVersion = 1;

struct Section {
  uint64_t offset, count;
};

struct Header {
  char magic[8];
  uint32_t version, header_size;
  char token[32];
  uint64_t file_size;
  Section strings, strlist, files, entities, params, snippets, imports;
  Section ent_terms, ent_postings, ent_doclen, ent_present;
  Section snip_terms, snip_postings, snip_doclen, snip_present;
  uint64_t ent_n_docs, ent_total_len, snip_n_docs, snip_total_len;
};

// Appends arrays at 8-byte aligned offsets; strings go to their own table.
class Writer {
 public:
  Writer() { buf_.resize(sizeof(Header)); }
  template <class T>
  Section add(const T* data, size_t count) {
    buf_.resize((buf_.size() + 7) / 8 * 8);
    Section s{buf_.size(), count};
    buf_.append(reinterpret_cast<const char*>(data), count * sizeof(T));
    return s;
  }
  template <class T>
  Section add(const std::vector<T>& v) {
    return add(v.data(), v.size());
  }
  image::Str str(std::string_view s) {
    image::Str r{static_cast<uint32_t>(strings_.size()), static_cast<uint32_t>(s.size())};
    strings_.append(s);
    return r;
  }
  std::string& strings() { return strings_; }
  std::string& buffer() { return buf_; }

 private:
  std::string buf_, strings_;
};

std::string new_token() {
  std::random_device rd;
  std::mt19937_64 g((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                    static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  return fmt::format("{:016x}{:016x}", g(), g());
}

void add_postings(Writer& w, const PostingsData& p, Section& terms, Section& postings, Section& doclen,
                  Section& present) {
  terms = w.add(p.terms);
  postings = w.add(p.postings);
  doclen = w.add(p.doc_len);
  present = w.add(p.present);
}

image::Entity entity_row(Writer& w, const EntityRec& e, std::vector<image::Str>& strlist,
                         std::vector<image::Param>& params) {
  image::Entity r{};
  r.id = e.id;
  r.file = e.file;
  r.ord = e.ord;
  r.parent = e.parent;
  r.kind = static_cast<int32_t>(e.kind);
  r.name = w.str(e.name);
  r.qualname = w.str(e.qualname);
  r.signature = w.str(e.signature);
  r.docstring = w.str(e.docstring);
  r.start_line = e.start_line;
  r.end_line = e.end_line;
  r.decorated_start_line = e.decorated_start_line;
  r.header_end_line = e.header_end_line;
  r.doc_start_line = e.doc_start_line;
  r.doc_end_line = e.doc_end_line;
  r.body_start_line = e.body_start_line;
  r.body_end_line = e.body_end_line;
  r.start_byte = e.start_byte;
  r.end_byte = e.end_byte;
  r.body_start_byte = e.body_start_byte;
  r.doc_len = e.doc_len;
  r.decorators = static_cast<uint32_t>(strlist.size());
  r.n_decorators = static_cast<uint32_t>(e.decorators.size());
  for (const auto& d : e.decorators) strlist.push_back(w.str(d));
  r.bases = static_cast<uint32_t>(strlist.size());
  r.n_bases = static_cast<uint32_t>(e.bases.size());
  for (const auto& b : e.bases) strlist.push_back(w.str(b));
  r.params = static_cast<uint32_t>(params.size());
  r.n_params = static_cast<uint32_t>(e.params.size());
  for (const auto& p : e.params)
    params.push_back({w.str(p.name), w.str(p.annotation), static_cast<int32_t>(p.kind), p.has_default ? 1 : 0});
  r.is_async = e.is_async ? 1 : 0;
  return r;
}

void write_tables(Writer& w, const RepoView& v, Header& h) {
  std::vector<image::File> files;
  for (const auto& f : v.files())
    files.push_back({f.id, w.str(f.path), w.str(f.module), w.str(f.package), w.str(f.hash),
                     static_cast<int32_t>(f.language), f.line_count, f.n_errors, f.first_entity, f.n_entities,
                     f.first_snippet, f.n_snippets, 0});
  std::vector<image::Str> strlist;
  std::vector<image::Param> params;
  std::vector<image::Entity> ents;
  ents.reserve(v.entities().size());
  for (const auto& e : v.entities()) ents.push_back(entity_row(w, e, strlist, params));
  std::vector<image::Snippet> snips;
  for (const auto& s : v.snippets()) snips.push_back({s.file, s.ord, s.start_line, s.end_line, s.doc_len, 0});
  std::vector<image::Import> imports;
  for (size_t f = 0; f < v.files().size(); ++f)
    for (const auto& im : v.imports(static_cast<int>(f)))
      imports.push_back({static_cast<int32_t>(f), im.line, im.scope, im.level, w.str(im.module), w.str(im.name),
                         w.str(im.alias), im.star ? 1 : 0, im.conditional ? 1 : 0});
  h.files = w.add(files);
  h.entities = w.add(ents);
  h.strlist = w.add(strlist);
  h.params = w.add(params);
  h.snippets = w.add(snips);
  h.imports = w.add(imports);
}

bool fits(const Section& s, size_t elem, size_t file_size) {
  return s.offset % 8 == 0 && s.offset <= file_size && s.count <= (file_size - s.offset) / std::max<size_t>(elem, 1);
}

}  // namespace

QueryImage::~QueryImage() {
  if (base_) munmap(const_cast<char*>(base_), size_);
}

std::unique_ptr<QueryImage> QueryImage::open(const std::string& db_path, const std::string& token) {
  if (token.size() != 32) return nullptr;
  int fd = ::open(path_for(db_path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(Header))
    p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  std::unique_ptr<QueryImage> img(new QueryImage());
  img->base_ = static_cast<const char*>(p);
  img->size_ = static_cast<size_t>(st.st_size);
  Header h;
  std::memcpy(&h, img->base_, sizeof h);
  const size_t n = img->size_;
  bool ok = std::memcmp(h.magic, kMagic, 8) == 0 && h.version == kVersion && h.header_size == sizeof(Header) &&
            h.file_size == n && std::string(h.token, 32) == token && fits(h.strings, 1, n) &&
            fits(h.strlist, sizeof(image::Str), n) && fits(h.files, sizeof(image::File), n) &&
            fits(h.entities, sizeof(image::Entity), n) && fits(h.params, sizeof(image::Param), n) &&
            fits(h.snippets, sizeof(image::Snippet), n) && fits(h.imports, sizeof(image::Import), n) &&
            fits(h.ent_terms, sizeof(PostingTerm), n) && fits(h.ent_postings, sizeof(Posting), n) &&
            fits(h.ent_doclen, 4, n) && fits(h.ent_present, 1, n) && fits(h.snip_terms, sizeof(PostingTerm), n) &&
            fits(h.snip_postings, sizeof(Posting), n) && fits(h.snip_doclen, 4, n) && fits(h.snip_present, 1, n) &&
            h.ent_doclen.count == h.entities.count && h.ent_present.count == h.entities.count &&
            h.snip_doclen.count == h.snippets.count && h.snip_present.count == h.snippets.count;
  if (!ok) {
    if (std::string(h.token, 32) == token) log_warn("the query image of '{}' is damaged; loading through SQL", db_path);
    return nullptr;
  }
  img->token_ = token;
  auto span_of = [&](const Section& s, auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    return std::span<const T>(reinterpret_cast<const T*>(img->base_ + s.offset), s.count);
  };
  img->strings_ = std::string_view(img->base_ + h.strings.offset, h.strings.count);
  img->files_ = span_of(h.files, (image::File*)nullptr);
  img->entities_ = span_of(h.entities, (image::Entity*)nullptr);
  img->params_ = span_of(h.params, (image::Param*)nullptr);
  img->strlist_ = span_of(h.strlist, (image::Str*)nullptr);
  img->snippets_ = span_of(h.snippets, (image::Snippet*)nullptr);
  img->imports_ = span_of(h.imports, (image::Import*)nullptr);
  img->entity_ = PostingsView{span_of(h.ent_terms, (PostingTerm*)nullptr),
                              span_of(h.ent_postings, (Posting*)nullptr),
                              span_of(h.ent_doclen, (uint32_t*)nullptr),
                              span_of(h.ent_present, (uint8_t*)nullptr),
                              h.ent_n_docs,
                              h.ent_total_len};
  img->snippet_ = PostingsView{span_of(h.snip_terms, (PostingTerm*)nullptr),
                               span_of(h.snip_postings, (Posting*)nullptr),
                               span_of(h.snip_doclen, (uint32_t*)nullptr),
                               span_of(h.snip_present, (uint8_t*)nullptr),
                               h.snip_n_docs,
                               h.snip_total_len};
  // Every list must lie inside the postings array (a posting's document id is checked where it is used).
  for (const PostingsView* pv : {&img->entity_, &img->snippet_})
    for (const auto& t : pv->terms)
      if (static_cast<uint64_t>(t.offset) + t.count > pv->postings.size()) {
        log_warn("the query image of '{}' is damaged (inverted lists); loading through SQL", db_path);
        return nullptr;
      }
  return img;
}

std::string_view QueryImage::str(image::Str s) const {
  if (static_cast<uint64_t>(s.off) + s.len > strings_.size())
    throw Error(ExitCode::bad_input, "the query image is damaged (a string outside its table)");
  return strings_.substr(s.off, s.len);
}

std::string publish_query_image(sql::Db& db, const RepoView& v) {
  v.load_all_terms();
  Writer w;
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.header_size = sizeof(Header);
  std::string token = new_token();
  std::memcpy(h.token, token.data(), 32);
  write_tables(w, v, h);
  {
    std::vector<const TermVec*> docs(v.entities().size());
    for (size_t i = 0; i < docs.size(); ++i) docs[i] = &v.entity_terms(static_cast<int>(i));
    PostingsData p = build_postings(docs);
    add_postings(w, p, h.ent_terms, h.ent_postings, h.ent_doclen, h.ent_present);
    h.ent_n_docs = p.n_docs;
    h.ent_total_len = p.total_len;
  }
  {
    std::vector<const TermVec*> docs(v.snippets().size());
    for (size_t i = 0; i < docs.size(); ++i) docs[i] = &v.snippet_terms(static_cast<int>(i));
    PostingsData p = build_postings(docs);
    add_postings(w, p, h.snip_terms, h.snip_postings, h.snip_doclen, h.snip_present);
    h.snip_n_docs = p.n_docs;
    h.snip_total_len = p.total_len;
  }
  h.strings = w.add(w.strings().data(), w.strings().size());
  std::string& buf = w.buffer();
  h.file_size = buf.size();
  std::memcpy(buf.data(), &h, sizeof h);
  // Written beside the database, synced, then renamed over the old image: a reader maps either image whole.
  const std::string path = QueryImage::path_for(v.db_path()), tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(ExitCode::bad_input, "cannot write the query image '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t k = ::write(fd, buf.data() + done, buf.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(ExitCode::bad_input, "cannot write the query image '" + tmp + "': " + std::strerror(errno));
    }
    done += static_cast<size_t>(k);
  }
  fdatasync(fd);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(ExitCode::bad_input, "cannot rename the query image into '" + path + "': " + std::strerror(errno));
  }
  meta_set(db, "query_image", token);
  return token;
}

void invalidate_query_image(sql::Db& db) {
  meta_set(db, "query_image", "");
}

void refresh_query_image(sql::Db& db, const std::string& db_path, bool changed) {
  std::string token = meta_get(db, "query_image");
  if (!changed && !token.empty() && QueryImage::open(db_path, token)) return;
  try {
    auto t0 = std::chrono::steady_clock::now();
    auto v = RepoView::open(db_path, false);
    publish_query_image(db, *v);
    log_debug("query image written in {:.3f}s",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (const std::exception& e) {
    log_warn("could not write the query image ({}); queries load the index through SQL (slower)", e.what());
  }
}

// ------------------------------------------------------------------ RepoView's side of the image
// (here rather than in repo_view.cpp: everything about the image format is in this file).

bool RepoView::load_image(const std::string& token) {
  auto img = QueryImage::open(db_path_, token);
  if (!img) return false;
  auto bad = [] { return Error(ExitCode::bad_input, "the query image is damaged (an index out of range)"); };
  try {
    const auto& sl = img->strlist();
    auto strings = [&](uint32_t first, uint32_t n) {
      if (static_cast<uint64_t>(first) + n > sl.size()) throw bad();
      std::vector<std::string> out;
      for (uint32_t i = 0; i < n; ++i) out.emplace_back(img->str(sl[first + i]));
      return out;
    };
    files_.reserve(img->files().size());
    by_path_.reserve(img->files().size());
    by_module_.reserve(img->files().size());
    by_name_.reserve(img->entities().size());
    for (const auto& r : img->files()) {
      FileRec f;
      f.id = r.id;
      f.path = img->str(r.path);
      f.module = img->str(r.module);
      f.package = img->str(r.package);
      f.hash = img->str(r.hash);
      f.language = static_cast<Language>(r.language);
      f.line_count = r.line_count;
      f.n_errors = r.n_errors;
      f.first_entity = r.first_entity;
      f.n_entities = r.n_entities;
      f.first_snippet = r.first_snippet;
      f.n_snippets = r.n_snippets;
      by_path_[f.path] = static_cast<int>(files_.size());
      if (!f.module.empty()) by_module_.emplace(f.module, static_cast<int>(files_.size()));
      files_.push_back(std::move(f));
    }
    const int n_files = static_cast<int>(files_.size());
    const auto n_ents = static_cast<int64_t>(img->entities().size());
    entities_.reserve(img->entities().size());
    for (const auto& r : img->entities()) {
      if (r.file < 0 || r.file >= n_files) throw bad();
      EntityRec e;
      e.id = r.id;
      e.file = r.file;
      e.ord = r.ord;
      e.parent = r.parent;
      e.name = img->str(r.name);
      e.qualname = img->str(r.qualname);
      e.kind = static_cast<EntityKind>(r.kind);
      e.start_line = r.start_line;
      e.end_line = r.end_line;
      e.decorated_start_line = r.decorated_start_line;
      e.header_end_line = r.header_end_line;
      e.doc_start_line = r.doc_start_line;
      e.doc_end_line = r.doc_end_line;
      e.body_start_line = r.body_start_line;
      e.body_end_line = r.body_end_line;
      e.start_byte = r.start_byte;
      e.end_byte = r.end_byte;
      e.body_start_byte = r.body_start_byte;
      e.signature = img->str(r.signature);
      e.docstring = img->str(r.docstring);
      e.decorators = strings(r.decorators, r.n_decorators);
      e.bases = strings(r.bases, r.n_bases);
      if (static_cast<uint64_t>(r.params) + r.n_params > img->params().size()) throw bad();
      for (uint32_t i = 0; i < r.n_params; ++i) {
        const auto& p = img->params()[r.params + i];
        Parameter pa;
        pa.name = img->str(p.name);
        pa.annotation = img->str(p.annotation);
        pa.kind = static_cast<Parameter::Kind>(p.kind);
        pa.has_default = p.has_default != 0;
        e.params.push_back(std::move(pa));
      }
      e.is_async = r.is_async != 0;
      e.doc_len = r.doc_len;
      e.parent_index = e.parent >= 0 ? files_[e.file].first_entity + e.parent : -1;
      if (e.parent_index >= n_ents) throw bad();
      by_name_[e.name].push_back(static_cast<int>(entities_.size()));
      entities_.push_back(std::move(e));
    }
    snippets_.reserve(img->snippets().size());
    for (const auto& r : img->snippets()) {
      if (r.file < 0 || r.file >= n_files) throw bad();
      snippets_.push_back(SnippetRec{r.file, r.ord, r.start_line, r.end_line, r.doc_len});
    }
    imports_.resize(files_.size());
    for (const auto& r : img->imports()) {
      if (r.file < 0 || r.file >= n_files) throw bad();
      Import im;
      im.line = r.line;
      im.scope = r.scope;
      im.module = img->str(r.module);
      im.level = r.level;
      im.name = img->str(r.name);
      im.alias = img->str(r.alias);
      im.star = r.star != 0;
      im.conditional = r.conditional != 0;
      imports_[r.file].push_back(std::move(im));
    }
  } catch (const Error& e) {
    log_warn("{} ('{}'); loading through SQL", e.what(), db_path_);
    files_.clear();
    entities_.clear();
    snippets_.clear();
    imports_.clear();
    by_path_.clear();
    by_module_.clear();
    by_name_.clear();
    return false;
  }
  refs_.resize(files_.size());
  contents_.resize(files_.size());
  entity_terms_.assign(entities_.size(), {});
  snippet_terms_.assign(snippets_.size(), {});
  file_terms_loaded_.assign(files_.size(), 0);
  image_ = std::move(img);
  return true;
}

void RepoView::load_file_terms(int file) const {
  if (file_terms_loaded_[file]) return;
  const FileRec& f = files_[file];
  {
    sql::Stmt s(*db_, "SELECT ord, doc_len, terms FROM entities WHERE file_id=?");
    s.bind(1, f.id);
    while (s.step())
      if (s.i32(0) >= 0 && s.i32(0) < f.n_entities)
        entity_terms_[f.first_entity + s.i32(0)] = TermVec::deserialize(s.blob(2), static_cast<uint32_t>(s.i64(1)));
  }
  {
    sql::Stmt s(*db_, "SELECT ord, doc_len, terms FROM snippets WHERE file_id=?");
    s.bind(1, f.id);
    while (s.step())
      if (s.i32(0) >= 0 && s.i32(0) < f.n_snippets)
        snippet_terms_[f.first_snippet + s.i32(0)] = TermVec::deserialize(s.blob(2), static_cast<uint32_t>(s.i64(1)));
  }
  file_terms_loaded_[file] = 1;
}

}  // namespace repoctx
