#include "index/query_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <unordered_map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "index/full_image.h"
#include "index/repo_view.h"
#include "index/schema.h"
#include "index/store.h"
#include "util/error.h"
#include "util/log.h"

namespace repoctx {

namespace {

constexpr char kMagic[8] = {'R', 'C', 'T', 'X', 'I', 'M', 'G', '1'};
constexpr uint32_t kVersion = 2;  // 2: update images (base_token, runs, File::origin)

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
  char base_token[32];          // an update's image: its base's token; zeros in a full image
  Section ent_runs, snip_runs;  // an update's image: the base documents kept (PostingRun)
};

// Lays arrays out at 8-byte aligned offsets after the header, without copying them: the pieces are written
// to the file from where they are (a 40 MB image assembled in one buffer cost a copy and its page faults,
// most of a one-file re-index). Strings go to their own table.
class Writer {
 public:
  struct Piece {
    const char* data;
    size_t size;
  };
  template <class T>
  Section add(const T* data, size_t count) {
    static constexpr char kZeros[8] = {};
    if (size_ % 8) {
      pieces_.push_back({kZeros, 8 - size_ % 8});
      size_ += 8 - size_ % 8;
    }
    Section s{size_, count};
    pieces_.push_back({reinterpret_cast<const char*>(data), count * sizeof(T)});
    size_ += count * sizeof(T);
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
  const std::vector<Piece>& pieces() const { return pieces_; }  // after the header
  uint64_t size() const { return size_; }                       // header included

 private:
  std::vector<Piece> pieces_;
  uint64_t size_ = sizeof(Header);
  std::string strings_;
};

std::string new_token() {
  std::random_device rd;
  std::mt19937_64 g((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                    static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  return fmt::format("{:016x}{:016x}", g(), g());
}

// An image's contents before they are laid out: built from a view (a full rebuild) or from the previous
// image and the files that changed (an update).
struct ImageBuild {
  Writer w;
  std::vector<image::File> files;
  std::vector<image::Entity> ents;
  std::vector<image::Str> strlist;
  std::vector<image::Param> params;
  std::vector<image::Snippet> snips;
  std::vector<image::Import> imports;
  // A full image: every document's lists. An update's image: the changed files' documents' lists, with
  // doc_len, present, n_docs and total_len of all documents; runs map the base's documents.
  PostingsData ent_post, snip_post;
  std::string base_token;  // an update's image: its base's token
  std::vector<PostingRun> ent_runs, snip_runs;
};

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

image::File file_row(Writer& w, const FileRec& f) {
  return {f.id,
          w.str(f.path),
          w.str(f.module),
          w.str(f.package),
          w.str(f.hash),
          static_cast<int32_t>(f.language),
          f.line_count,
          f.n_errors,
          f.first_entity,
          f.n_entities,
          f.first_snippet,
          f.n_snippets,
          -1};
}

void build_from_view(ImageBuild& b, const RepoView& v) {
  v.load_all_terms();
  for (const auto& f : v.files()) b.files.push_back(file_row(b.w, f));
  b.ents.reserve(v.entities().size());
  for (const auto& e : v.entities()) b.ents.push_back(entity_row(b.w, e, b.strlist, b.params));
  for (const auto& s : v.snippets()) b.snips.push_back({s.file, s.ord, s.start_line, s.end_line, s.doc_len, 0});
  for (size_t f = 0; f < v.files().size(); ++f)
    for (const auto& im : v.imports(static_cast<int>(f)))
      b.imports.push_back({static_cast<int32_t>(f), im.line, im.scope, im.level, b.w.str(im.module), b.w.str(im.name),
                           b.w.str(im.alias), im.star ? 1 : 0, im.conditional ? 1 : 0});
  std::vector<const TermVec*> docs(v.entities().size());
  for (size_t i = 0; i < docs.size(); ++i) docs[i] = &v.entity_terms(static_cast<int>(i));
  b.ent_post = build_postings(docs);
  docs.assign(v.snippets().size(), nullptr);
  for (size_t i = 0; i < docs.size(); ++i) docs[i] = &v.snippet_terms(static_cast<int>(i));
  b.snip_post = build_postings(docs);
}

// A failed write of the image: the partial file is removed (it would hold the space a full disk lacks), and
// a full disk is DiskFull naming the index, which the callers pass on; any other failure only warns there.
[[noreturn]] void image_write_failed(int fd, int err, const std::string& tmp, const std::string& db_path) {
  if (fd >= 0) ::close(fd);
  ::unlink(tmp.c_str());
  if (err == ENOSPC || err == EDQUOT)
    throw DiskFull("no space left on the disk holding the index '" + db_path + "' (writing its query image '" + tmp +
                   "': " + std::strerror(err) + "); " + disk_full_hint(db_path));
  throw Error(ExitCode::bad_input, "cannot write the query image '" + tmp + "': " + std::strerror(err));
}

void write_all(int fd, const char* data, size_t size, const std::string& tmp, const std::string& db_path) {
  size_t done = 0;
  while (done < size) {
    ssize_t k = ::write(fd, data + done, size - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) image_write_failed(fd, k == 0 ? EIO : errno, tmp, db_path);
    done += static_cast<size_t>(k);
  }
}

void write_file_atomically(const std::string& path, const std::string& db_path, const Header& h,
                           const std::vector<Writer::Piece>& pieces) {
  // Written beside the database, synced, then renamed over the old image: a reader maps either image whole.
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) image_write_failed(-1, errno, tmp, db_path);
  write_all(fd, reinterpret_cast<const char*>(&h), sizeof h, tmp, db_path);
  for (const auto& p : pieces) write_all(fd, p.data, p.size, tmp, db_path);
  // Space a file system reserves lazily can run out only when the data reaches the disk.
  if (fdatasync(fd) != 0 && (errno == ENOSPC || errno == EDQUOT)) image_write_failed(fd, errno, tmp, db_path);
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(ExitCode::bad_input, "cannot rename the query image into '" + path + "': " + std::strerror(errno));
  }
}

// Lays the build out (header, tables, lists, strings), writes it and names it in meta.
std::string write_image(sql::Db& db, const std::string& db_path, ImageBuild& b) {
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.header_size = sizeof(Header);
  std::string token = new_token();
  std::memcpy(h.token, token.data(), 32);
  Writer& w = b.w;
  h.files = w.add(b.files);
  h.entities = w.add(b.ents);
  h.strlist = w.add(b.strlist);
  h.params = w.add(b.params);
  h.snippets = w.add(b.snips);
  h.imports = w.add(b.imports);
  h.ent_terms = w.add(b.ent_post.terms);
  h.ent_postings = w.add(b.ent_post.postings);
  h.ent_doclen = w.add(b.ent_post.doc_len);
  h.ent_present = w.add(b.ent_post.present);
  h.ent_n_docs = b.ent_post.n_docs;
  h.ent_total_len = b.ent_post.total_len;
  h.snip_terms = w.add(b.snip_post.terms);
  h.snip_postings = w.add(b.snip_post.postings);
  h.snip_doclen = w.add(b.snip_post.doc_len);
  h.snip_present = w.add(b.snip_post.present);
  h.snip_n_docs = b.snip_post.n_docs;
  h.snip_total_len = b.snip_post.total_len;
  const bool delta = !b.base_token.empty();
  if (delta) std::memcpy(h.base_token, b.base_token.data(), 32);
  h.ent_runs = w.add(b.ent_runs);
  h.snip_runs = w.add(b.snip_runs);
  h.strings = w.add(w.strings().data(), w.strings().size());
  h.file_size = w.size();
  write_file_atomically(delta ? QueryImage::delta_path_for(db_path) : QueryImage::path_for(db_path), db_path, h,
                        w.pieces());
  meta_set(db, "query_image", token);
  if (!delta) {  // a full image replaces any update's image (whose base it was or was not)
    std::error_code ec;
    std::filesystem::remove(QueryImage::delta_path_for(db_path), ec);
  }
  return token;
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
  // The full image carries the token, or an update's image does (and names its base).
  if (auto img = map_file(path_for(db_path), db_path, token, false)) return img;
  auto img = map_file(delta_path_for(db_path), db_path, token, true);
  if (!img) return nullptr;
  img->base_image_ = map_file(path_for(db_path), db_path, img->base_token_, false);
  if (!img->base_image_) return nullptr;  // its base was replaced meanwhile: through SQL
  const QueryImage& base = *img->base_image_;
  // The files' references into the base, the runs against the base's documents, then the overlay.
  for (const auto& f : img->files_) {
    if (f.origin < 0) continue;
    if (static_cast<size_t>(f.origin) >= base.files_.size()) return nullptr;
    const image::File& bf = base.files_[static_cast<size_t>(f.origin)];
    if (bf.first_entity != f.first_entity || bf.n_entities != f.n_entities || bf.first_snippet != f.first_snippet ||
        bf.n_snippets != f.n_snippets)
      return nullptr;
  }
  auto runs_fit = [](std::span<const PostingRun> runs, size_t base_docs, size_t docs) {
    int64_t prev_end = 0;
    for (const auto& r : runs) {
      if (r.begin >= r.end || r.begin < prev_end || r.end > base_docs || static_cast<int64_t>(r.begin) + r.shift < 0 ||
          static_cast<int64_t>(r.end) + r.shift > static_cast<int64_t>(docs))
        return false;
      prev_end = r.end;
    }
    return true;
  };
  PostingsView& e = img->entity_;
  PostingsView& sn = img->snippet_;
  if (!runs_fit(e.runs, base.entity_.doc_len.size(), e.doc_len.size()) ||
      !runs_fit(sn.runs, base.snippet_.doc_len.size(), sn.doc_len.size())) {
    log_warn("the query image update of '{}' is damaged (runs); loading through SQL", db_path);
    return nullptr;
  }
  for (PostingsView* pv : {&e, &sn}) {
    const PostingsView& bv = pv == &e ? base.entity_ : base.snippet_;
    pv->extra_terms = pv->terms;
    pv->extra_postings = pv->postings;
    pv->terms = bv.terms;
    pv->postings = bv.postings;
  }
  return img;
}

std::unique_ptr<QueryImage> QueryImage::map_file(const std::string& path, const std::string& db_path,
                                                 const std::string& token, bool delta) {
  if (token.size() != 32) return nullptr;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
  static constexpr char kNoBase[32] = {};
  const bool is_delta = std::memcmp(h.base_token, kNoBase, 32) != 0;
  bool ok = std::memcmp(h.magic, kMagic, 8) == 0 && h.version == kVersion && h.header_size == sizeof(Header) &&
            h.file_size == n && std::string(h.token, 32) == token && is_delta == delta && fits(h.strings, 1, n) &&
            fits(h.strlist, sizeof(image::Str), n) && fits(h.files, sizeof(image::File), n) &&
            fits(h.entities, sizeof(image::Entity), n) && fits(h.params, sizeof(image::Param), n) &&
            fits(h.snippets, sizeof(image::Snippet), n) && fits(h.imports, sizeof(image::Import), n) &&
            fits(h.ent_terms, sizeof(PostingTerm), n) && fits(h.ent_postings, sizeof(Posting), n) &&
            fits(h.ent_doclen, 4, n) && fits(h.ent_present, 1, n) && fits(h.snip_terms, sizeof(PostingTerm), n) &&
            fits(h.snip_postings, sizeof(Posting), n) && fits(h.snip_doclen, 4, n) && fits(h.snip_present, 1, n) &&
            fits(h.ent_runs, sizeof(PostingRun), n) && fits(h.snip_runs, sizeof(PostingRun), n) &&
            h.ent_present.count == h.ent_doclen.count && h.snip_present.count == h.snip_doclen.count &&
            // A full image's lists number its own documents; an update's, every document.
            (delta || (h.ent_doclen.count == h.entities.count && h.snip_doclen.count == h.snippets.count &&
                       h.ent_runs.count == 0 && h.snip_runs.count == 0));
  if (!ok) {
    if (std::string(h.token, 32) == token && is_delta == delta)
      log_warn("the query image of '{}' is damaged; loading through SQL", db_path);
    return nullptr;
  }
  img->token_ = token;
  if (delta) img->base_token_.assign(h.base_token, 32);
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
                              h.ent_total_len,
                              span_of(h.ent_runs, (PostingRun*)nullptr),
                              {},
                              {}};
  img->snippet_ = PostingsView{span_of(h.snip_terms, (PostingTerm*)nullptr),
                               span_of(h.snip_postings, (Posting*)nullptr),
                               span_of(h.snip_doclen, (uint32_t*)nullptr),
                               span_of(h.snip_present, (uint8_t*)nullptr),
                               h.snip_n_docs,
                               h.snip_total_len,
                               span_of(h.snip_runs, (PostingRun*)nullptr),
                               {},
                               {}};
  return img;
}

bool QueryImage::lists_fit() const {
  for (const PostingsView* pv : {&entity_, &snippet_})
    for (const auto* terms : {&pv->terms, &pv->extra_terms})
      for (const auto& t : *terms)
        if (static_cast<uint64_t>(t.offset) + t.count >
            (terms == &pv->terms ? pv->postings.size() : pv->extra_postings.size()))
          return false;
  return true;
}

std::string_view QueryImage::str(image::Str s) const {
  if (static_cast<uint64_t>(s.off) + s.len > strings_.size())
    throw Error(ExitCode::bad_input, "the query image is damaged (a string outside its table)");
  return strings_.substr(s.off, s.len);
}

std::string publish_full_image(sql::Db& db, const std::string& db_path, std::vector<CollectedFile>& files) {
  // The view's order: files by path (SQLite's BINARY collation is bytewise, as std::string's <), each file's
  // entities and snippets by ord, imports by line (stable: rows in extraction order).
  std::sort(files.begin(), files.end(),
            [](const CollectedFile& a, const CollectedFile& b) { return a.file.path < b.file.path; });
  // Strings are laid out in build_from_view's order: every file's, then every entity's, then imports'.
  ImageBuild b;
  int n_ents = 0, n_snips = 0;
  for (CollectedFile& cf : files) {
    FileRec& f = cf.file;
    f.n_entities = static_cast<int>(cf.entities.size());
    f.n_snippets = static_cast<int>(cf.snippets.size());
    f.first_entity = f.n_entities ? n_ents : 0;  // as the view leaves them for files without rows
    f.first_snippet = f.n_snippets ? n_snips : 0;
    n_ents += f.n_entities;
    n_snips += f.n_snippets;
    b.files.push_back(file_row(b.w, f));
  }
  std::vector<const TermVec*> ent_docs, snip_docs;
  ent_docs.reserve(n_ents);
  snip_docs.reserve(n_snips);
  b.ents.reserve(n_ents);
  for (size_t fi = 0; fi < files.size(); ++fi)
    for (size_t i = 0; i < files[fi].entities.size(); ++i) {
      files[fi].entities[i].file = static_cast<int>(fi);
      b.ents.push_back(entity_row(b.w, files[fi].entities[i], b.strlist, b.params));
      ent_docs.push_back(&files[fi].entity_terms[i]);
    }
  for (size_t fi = 0; fi < files.size(); ++fi)
    for (size_t i = 0; i < files[fi].snippets.size(); ++i) {
      const SnippetRec& sn = files[fi].snippets[i];
      b.snips.push_back({static_cast<int32_t>(fi), sn.ord, sn.start_line, sn.end_line, sn.doc_len, 0});
      snip_docs.push_back(&files[fi].snippet_terms[i]);
    }
  for (size_t fi = 0; fi < files.size(); ++fi) {
    auto& ims = files[fi].imports;
    std::stable_sort(ims.begin(), ims.end(), [](const Import& x, const Import& y) { return x.line < y.line; });
    for (const auto& im : ims)
      b.imports.push_back({static_cast<int32_t>(fi), im.line, im.scope, im.level, b.w.str(im.module), b.w.str(im.name),
                           b.w.str(im.alias), im.star ? 1 : 0, im.conditional ? 1 : 0});
  }
  b.ent_post = build_postings(ent_docs);
  b.snip_post = build_postings(snip_docs);
  return write_image(db, db_path, b);
}

std::string publish_query_image(sql::Db& db, const RepoView& v) {
  ImageBuild b;
  build_from_view(b, v);
  return write_image(db, v.db_path(), b);
}

namespace {

// ---------------------------------------------------------------------------- updating an image
// A run that re-parsed a few files rewrites the image from the previous one: records of files whose row is
// unchanged (same id and content hash: the indexer replaces the rows of every file it re-parses) are copied,
// the others read from the database, and the inverted lists merged (old postings renumbered, postings of
// the new documents inserted), so that a one-file change costs a pass over the image, not a full load.

struct Added {
  uint64_t term;
  uint32_t doc, tf;
};

// The kept old documents as runs [begin, end) of one shift each (remap: old document -> its number now, -1
// gone). Both numberings follow the files' path order and a kept file keeps its documents' order, so the
// numbers grow along the old documents; anything else is a damaged image.
std::vector<PostingRun> kept_runs(const std::vector<int32_t>& remap, size_t n_docs) {
  std::vector<PostingRun> runs;
  int64_t last_new = -1;
  for (size_t o = 0; o < remap.size(); ++o) {
    if (remap[o] < 0) continue;
    if (remap[o] <= last_new || static_cast<size_t>(remap[o]) >= n_docs)
      throw Error(ExitCode::bad_input, "the previous query image is damaged");  // numbering out of order
    last_new = remap[o];
    const int64_t shift = static_cast<int64_t>(remap[o]) - static_cast<int64_t>(o);
    if (!runs.empty() && runs.back().end == o && runs.back().shift == shift)
      ++runs.back().end;
    else
      runs.push_back({static_cast<uint32_t>(o), static_cast<uint32_t>(o + 1), static_cast<int32_t>(shift), 0});
  }
  return runs;
}

// The documents' lengths and presence now: the kept old ones' (by `remap`) and the added ones'.
void current_documents(PostingsData& d, const PostingsView& old, const std::vector<int32_t>& remap,
                       const std::vector<std::pair<int, TermVec>>& added, size_t n_docs) {
  d.doc_len.assign(n_docs, 0);
  d.present.assign(n_docs, 0);
  for (size_t o = 0; o < remap.size(); ++o)
    if (remap[o] >= 0 && o < old.present.size() && old.present[o]) {
      d.present[remap[o]] = 1;
      d.doc_len[remap[o]] = old.doc_len[o];
    }
  for (const auto& [doc, tv] : added) {
    d.present[doc] = 1;
    d.doc_len[doc] = tv.length;
  }
  d.n_docs = d.total_len = 0;
  for (size_t i = 0; i < n_docs; ++i)
    if (d.present[i]) {
      ++d.n_docs;
      d.total_len += d.doc_len[i];
    }
}

// The old lists with documents renumbered by `remap` (-1: gone), merged with the new documents' terms.
// Both numberings follow the files' path order and each kept file keeps its documents' order, so `remap`
// is a shift by a constant over runs of old documents (one run before a changed file, one after it): each
// list is cut at the runs' bounds (binary search) and copied run by run with the run's shift, the new
// documents' postings inserted between runs. A one-file change cost a merge step per posting (~3.7
// million on sympy, 16% of the run) before.
PostingsData merge_postings(const PostingsView& old, const std::vector<int32_t>& remap,
                            const std::vector<std::pair<int, TermVec>>& added, size_t n_docs) {
  PostingsData d;
  current_documents(d, old, remap, added, n_docs);
  const std::vector<PostingRun> runs = kept_runs(remap, n_docs);
  std::vector<Added> adds;
  for (const auto& [doc, tv] : added)
    for (const auto& [t, tf] : tv.terms) adds.push_back({t, static_cast<uint32_t>(doc), tf});
  std::sort(adds.begin(), adds.end(),
            [](const Added& a, const Added& b) { return a.term != b.term ? a.term < b.term : a.doc < b.doc; });
  d.postings.resize(old.postings.size() + adds.size());  // an upper bound; cut to size at the end
  Posting* out = d.postings.data();
  size_t ai = 0;
  auto flush_new_terms_below = [&](uint64_t limit, bool all) {
    while (ai < adds.size() && (all || adds[ai].term < limit)) {
      uint64_t term = adds[ai].term;
      uint32_t off = static_cast<uint32_t>(out - d.postings.data());
      for (; ai < adds.size() && adds[ai].term == term; ++ai) *out++ = {adds[ai].doc, adds[ai].tf};
      d.terms.push_back({term, off, static_cast<uint32_t>(out - d.postings.data() - off)});
    }
  };
  auto by_doc = [](const Posting& p, uint32_t doc) { return p.doc < doc; };
  for (const auto& t : old.terms) {
    flush_new_terms_below(t.term, false);
    const uint32_t off = static_cast<uint32_t>(out - d.postings.data());
    if (static_cast<uint64_t>(t.offset) + t.count > old.postings.size())
      throw Error(ExitCode::bad_input, "the previous query image is damaged");
    const Posting* lo = old.postings.data() + t.offset;
    const Posting* const end = lo + t.count;
    // This term's new documents, in document order; each goes before the first run starting after it.
    auto emit_new_below = [&](int64_t limit) {
      for (; ai < adds.size() && adds[ai].term == t.term && adds[ai].doc < limit; ++ai)
        *out++ = {adds[ai].doc, adds[ai].tf};
    };
    for (const PostingRun& r : runs) {
      if (lo == end) break;
      lo = std::lower_bound(lo, end, r.begin, by_doc);
      const Posting* hi = std::lower_bound(lo, end, r.end, by_doc);
      if (lo == hi) continue;
      emit_new_below(static_cast<int64_t>(lo->doc) + r.shift);
      const uint32_t shift = static_cast<uint32_t>(r.shift);  // modulo 2^32: docs stay below n_docs
      uint32_t outside = 0;  // a list out of document order (a damaged image) shows as docs outside the run
      for (const Posting* p = lo; p != hi; ++p) {
        outside |= static_cast<uint32_t>(p->doc - r.begin >= r.end - r.begin);
        *out++ = {p->doc + shift, p->tf};
      }
      if (outside) throw Error(ExitCode::bad_input, "the previous query image is damaged");
      lo = hi;
    }
    if (t.count > 0 && end[-1].doc >= remap.size())
      throw Error(ExitCode::bad_input, "the previous query image is damaged");
    emit_new_below(std::numeric_limits<int64_t>::max());
    const uint32_t count = static_cast<uint32_t>(out - d.postings.data() - off);
    if (count > 0) d.terms.push_back({t.term, off, count});
  }
  flush_new_terms_below(0, true);
  d.postings.resize(static_cast<size_t>(out - d.postings.data()));
  return d;
}

// An update's lists over the base's: the added documents' own lists, the kept documents as runs.
PostingsData overlay_lists(const PostingsView& old, const std::vector<int32_t>& remap,
                           const std::vector<std::pair<int, TermVec>>& added, size_t n_docs,
                           std::vector<PostingRun>& runs) {
  runs = kept_runs(remap, n_docs);
  std::vector<const TermVec*> docs(n_docs, nullptr);
  for (const auto& [doc, tv] : added) docs[static_cast<size_t>(doc)] = &tv;
  PostingsData d = build_postings(docs);
  current_documents(d, old, remap, added, n_docs);
  return d;
}

image::Str copy_str(Writer& w, const QueryImage& old, image::Str s) {
  return w.str(old.str(s));
}

// The records of an unchanged file, copied from the previous image under its new file index.
void copy_file_records(ImageBuild& b, const QueryImage& old, const image::File& of, int32_t nf,
                       std::vector<int32_t>& ent_map, std::vector<int32_t>& snip_map,
                       std::span<const image::Import> old_imports) {
  Writer& w = b.w;
  if (static_cast<uint64_t>(of.first_entity) + of.n_entities > old.entities().size() ||
      static_cast<uint64_t>(of.first_snippet) + of.n_snippets > old.snippets().size())
    throw Error(ExitCode::bad_input, "the previous query image is damaged");
  for (int i = of.first_entity; i < of.first_entity + of.n_entities; ++i) {
    image::Entity e = old.entities()[i];
    e.file = nf;
    for (image::Str* f : {&e.name, &e.qualname, &e.signature, &e.docstring}) *f = copy_str(w, old, *f);
    auto list = [&](uint32_t& first, uint32_t n) {
      if (static_cast<uint64_t>(first) + n > old.strlist().size())
        throw Error(ExitCode::bad_input, "the previous query image is damaged");
      uint32_t at = static_cast<uint32_t>(b.strlist.size());
      for (uint32_t k = 0; k < n; ++k) b.strlist.push_back(copy_str(w, old, old.strlist()[first + k]));
      first = at;
    };
    list(e.decorators, e.n_decorators);
    list(e.bases, e.n_bases);
    if (static_cast<uint64_t>(e.params) + e.n_params > old.params().size())
      throw Error(ExitCode::bad_input, "the previous query image is damaged");
    uint32_t at = static_cast<uint32_t>(b.params.size());
    for (uint32_t k = 0; k < e.n_params; ++k) {
      image::Param pa = old.params()[e.params + k];
      pa.name = copy_str(w, old, pa.name);
      pa.annotation = copy_str(w, old, pa.annotation);
      b.params.push_back(pa);
    }
    e.params = at;
    ent_map[i] = static_cast<int32_t>(b.ents.size());
    b.ents.push_back(e);
  }
  for (int i = of.first_snippet; i < of.first_snippet + of.n_snippets; ++i) {
    image::Snippet sn = old.snippets()[i];
    sn.file = nf;
    snip_map[i] = static_cast<int32_t>(b.snips.size());
    b.snips.push_back(sn);
  }
  for (image::Import im : old_imports) {
    im.file = nf;
    for (image::Str* f : {&im.module, &im.name, &im.alias}) *f = copy_str(w, old, *f);
    b.imports.push_back(im);
  }
}

// The records of a file the run re-parsed, read from the database; its documents' terms go to `ents`/`snips`.
void read_file_records(ImageBuild& b, sql::Db& db, int64_t file_id, int32_t nf, image::File& fr,
                       std::vector<std::pair<int, TermVec>>& ents, std::vector<std::pair<int, TermVec>>& snips) {
  Writer& w = b.w;
  sql::Stmt e(db,
              "SELECT id, ord, parent_ord, name, qualname, kind, start_line, end_line, decorated_start_line, "
              "header_end_line, doc_start_line, doc_end_line, body_start_line, body_end_line, start_byte, end_byte, "
              "body_start_byte, signature, docstring, decorators, bases, params, is_async, doc_len, terms "
              "FROM entities WHERE file_id=? ORDER BY ord");
  e.bind(1, file_id);
  while (e.step()) {
    EntityRec r;
    r.id = e.i64(0);
    r.file = nf;
    r.ord = e.i32(1);
    r.parent = e.i32(2);
    r.name = e.str(3);
    r.qualname = e.str(4);
    r.kind = kind_from_name(e.str(5)).value_or(EntityKind::function);
    int* lines[] = {&r.start_line,     &r.end_line,     &r.decorated_start_line, &r.header_end_line,
                    &r.doc_start_line, &r.doc_end_line, &r.body_start_line,      &r.body_end_line};
    for (int k = 0; k < 8; ++k) *lines[k] = e.i32(6 + k);
    r.start_byte = static_cast<uint32_t>(e.i64(14));
    r.end_byte = static_cast<uint32_t>(e.i64(15));
    r.body_start_byte = static_cast<uint32_t>(e.i64(16));
    r.signature = e.str(17);
    r.docstring = e.str(18);
    r.decorators = decode_strings(e.str(19));
    r.bases = decode_strings(e.str(20));
    r.params = decode_params(e.str(21));
    r.is_async = e.i32(22) != 0;
    r.doc_len = static_cast<uint32_t>(e.i64(23));
    ents.emplace_back(static_cast<int>(b.ents.size()), TermVec::deserialize(e.blob(24), r.doc_len));
    b.ents.push_back(entity_row(w, r, b.strlist, b.params));
    ++fr.n_entities;
  }
  sql::Stmt s(db, "SELECT ord, start_line, end_line, doc_len, terms FROM snippets WHERE file_id=? ORDER BY ord");
  s.bind(1, file_id);
  while (s.step()) {
    uint32_t len = static_cast<uint32_t>(s.i64(3));
    snips.emplace_back(static_cast<int>(b.snips.size()), TermVec::deserialize(s.blob(4), len));
    b.snips.push_back({nf, s.i32(0), s.i32(1), s.i32(2), len, 0});
    ++fr.n_snippets;
  }
  sql::Stmt im(db,
               "SELECT line, scope_ord, module, level, name, alias, star, conditional FROM imports WHERE file_id=? "
               "ORDER BY line");
  im.bind(1, file_id);
  while (im.step())
    b.imports.push_back({nf, im.i32(0), im.i32(1), im.i32(3), w.str(im.str(2)), w.str(im.str(4)), w.str(im.str(5)),
                         im.i32(6), im.i32(7)});
}

// A previous image's files by path: which of them the database still holds as they were (same id and
// content hash: the indexer replaces the rows of every file it re-parses). Both update paths ask it.
class KeptFiles {
 public:
  explicit KeptFiles(const QueryImage& img) : img_(img) {
    for (size_t i = 0; i < img.files().size(); ++i) by_path_.emplace(img.str(img.files()[i].path), static_cast<int>(i));
  }
  // The image's index of `f` when unchanged, else -1.
  int unchanged(const FileRec& f) const {
    auto it = by_path_.find(f.path);
    if (it == by_path_.end()) return -1;
    const image::File& of = img_.files()[it->second];
    return of.id == f.id && img_.str(of.hash) == f.hash ? it->second : -1;
  }

 private:
  const QueryImage& img_;
  std::unordered_map<std::string_view, int> by_path_;  // views into the mapped image
};

// Fills `b` from the previous image and the database; false when nothing is left to reuse.
bool build_update(ImageBuild& b, sql::Db& db, const QueryImage& old) {
  // About the previous sizes again: no reallocation while tens of MB are copied.
  b.w.strings().reserve(old.string_bytes() + old.string_bytes() / 8);
  b.ents.reserve(old.entities().size() + old.entities().size() / 8);
  b.strlist.reserve(old.strlist().size() + old.strlist().size() / 8);
  b.params.reserve(old.params().size() + old.params().size() / 8);
  b.snips.reserve(old.snippets().size() + old.snippets().size() / 8);
  b.imports.reserve(old.imports().size() + old.imports().size() / 8);
  const KeptFiles kept(old);
  std::vector<std::pair<size_t, size_t>> old_imports(old.files().size(), {0, 0});  // per old file: [begin, end)
  for (size_t i = 0; i < old.imports().size(); ++i) {
    int32_t f = old.imports()[i].file;
    if (f < 0 || static_cast<size_t>(f) >= old_imports.size()) throw Error(ExitCode::bad_input, "damaged image");
    if (old_imports[f].second == 0) old_imports[f].first = i;
    old_imports[f].second = i + 1;
  }
  std::vector<int32_t> ent_map(old.entities().size(), -1), snip_map(old.snippets().size(), -1);
  std::vector<std::pair<int, TermVec>> new_ents, new_snips;
  size_t reused = 0;
  sql::Stmt s(db, kFileRowsByPath);
  while (s.step()) {
    FileRec f = file_from_row(s);
    f.first_entity = static_cast<int>(b.ents.size());
    f.first_snippet = static_cast<int>(b.snips.size());
    const int32_t nf = static_cast<int32_t>(b.files.size());
    const int oi = kept.unchanged(f);
    if (oi >= 0) {
      const image::File* of = &old.files()[oi];
      f.n_entities = of->n_entities;
      f.n_snippets = of->n_snippets;
      auto [ib, ie] = old_imports[oi];
      copy_file_records(b, old, *of, nf, ent_map, snip_map, old.imports().subspan(ib, ie - ib));
      b.files.push_back(file_row(b.w, f));
      ++reused;
    } else {
      image::File fr = file_row(b.w, f);
      read_file_records(b, db, f.id, nf, fr, new_ents, new_snips);
      b.files.push_back(fr);
    }
  }
  if (reused == 0) return false;
  b.ent_post = merge_postings(old.entity_postings(), ent_map, new_ents, b.ents.size());
  b.snip_post = merge_postings(old.snippet_postings(), snip_map, new_snips, b.snips.size());
  return true;
}

// Fills `b` as an update's image over `base` (a full image): the files table, the records and lists of the
// files changed since the base, runs for the base's documents that are kept. False when the changed files
// hold more than a sixteenth of the files or documents: a full image is written then, so that the lists
// a query walks twice stay a small part of it.
bool build_delta(ImageBuild& b, sql::Db& db, const QueryImage& base) {
  const KeptFiles kept(base);
  std::vector<int32_t> ent_map(base.entities().size(), -1), snip_map(base.snippets().size(), -1);
  std::vector<std::pair<int, TermVec>> new_ents, new_snips;  // numbered by the update's tables, then now
  size_t n_ents = 0, n_snips = 0, changed = 0;
  sql::Stmt s(db, kFileRowsByPath);
  while (s.step()) {
    FileRec f = file_from_row(s);
    const int32_t nf = static_cast<int32_t>(b.files.size());
    const int bi = kept.unchanged(f);
    if (bi >= 0) {
      const image::File* of = &base.files()[bi];
      if (of->first_entity < 0 || of->n_entities < 0 || of->first_snippet < 0 || of->n_snippets < 0 ||
          static_cast<uint64_t>(of->first_entity) + of->n_entities > ent_map.size() ||
          static_cast<uint64_t>(of->first_snippet) + of->n_snippets > snip_map.size())
        throw Error(ExitCode::bad_input, "the previous query image is damaged");
      image::File fr = file_row(b.w, f);
      fr.first_entity = of->first_entity;
      fr.n_entities = of->n_entities;
      fr.first_snippet = of->first_snippet;
      fr.n_snippets = of->n_snippets;
      fr.origin = bi;
      for (int k = 0; k < of->n_entities; ++k) ent_map[of->first_entity + k] = static_cast<int32_t>(n_ents + k);
      for (int k = 0; k < of->n_snippets; ++k) snip_map[of->first_snippet + k] = static_cast<int32_t>(n_snips + k);
      n_ents += static_cast<size_t>(of->n_entities);
      n_snips += static_cast<size_t>(of->n_snippets);
      b.files.push_back(fr);
      continue;
    }
    ++changed;
    f.first_entity = static_cast<int>(b.ents.size());
    f.first_snippet = static_cast<int>(b.snips.size());
    image::File fr = file_row(b.w, f);
    const size_t e0 = b.ents.size(), s0 = b.snips.size(), ne = new_ents.size(), ns = new_snips.size();
    read_file_records(b, db, f.id, nf, fr, new_ents, new_snips);
    for (size_t i = ne; i < new_ents.size(); ++i)
      new_ents[i].first = static_cast<int>(n_ents + (static_cast<size_t>(new_ents[i].first) - e0));
    for (size_t i = ns; i < new_snips.size(); ++i)
      new_snips[i].first = static_cast<int>(n_snips + (static_cast<size_t>(new_snips[i].first) - s0));
    n_ents += static_cast<size_t>(fr.n_entities);
    n_snips += static_cast<size_t>(fr.n_snippets);
    b.files.push_back(fr);
  }
  if (changed * 16 > b.files.size() || (new_ents.size() + new_snips.size()) * 16 > n_ents + n_snips) return false;
  b.base_token = base.token();
  b.ent_post = overlay_lists(base.entity_postings(), ent_map, new_ents, n_ents, b.ent_runs);
  b.snip_post = overlay_lists(base.snippet_postings(), snip_map, new_snips, n_snips, b.snip_runs);
  return true;
}

}  // namespace

void invalidate_query_image(sql::Db& db) {
  // The image on disk stays, named as the base the next complete run updates from.
  std::string token = meta_get(db, "query_image");
  if (!token.empty()) meta_set(db, "query_image_base", token);
  meta_set(db, "query_image", "");
}

void refresh_query_image(sql::Db& db, const std::string& db_path, bool changed, bool full) {
  std::string token = meta_get(db, "query_image");
  if (!changed && !token.empty())
    if (auto current = QueryImage::open(db_path, token); current && current->lists_fit()) return;
  auto t0 = std::chrono::steady_clock::now();
  try {
    if (!full) {
      std::string base = token.empty() ? meta_get(db, "query_image_base") : token;
      if (auto old = QueryImage::open(db_path, base)) {
        // An update's image is made anew over the same base; a full image becomes the base.
        const QueryImage& full_base = old->base() ? *old->base() : *old;
        {
          ImageBuild d;
          if (build_delta(d, db, full_base)) {
            write_image(db, db_path, d);
            log_debug("query image update ({} files changed since its base) written in {:.3f}s",
                      std::count_if(d.files.begin(), d.files.end(), [](const image::File& f) { return f.origin < 0; }),
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            return;
          }
        }
        ImageBuild b;
        if (build_update(b, db, full_base)) {
          old.reset();  // unmapped before the new image replaces its file
          write_image(db, db_path, b);
          log_debug("query image rewritten in {:.3f}s",
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          return;
        }
      }
    }
  } catch (const DiskFull&) {
    throw;
  } catch (const std::exception& e) {
    log_debug("updating the query image failed ({}); rebuilding it", e.what());
  }
  try {
    auto v = RepoView::open(db_path, false);
    log_debug("query image: index loaded in {:.3f}s",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    publish_query_image(db, *v);
    log_debug("query image written in {:.3f}s",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (const DiskFull&) {
    throw;
  } catch (const std::exception& e) {
    log_warn("could not write the query image ({}); queries load the index through SQL (slower)", e.what());
  }
}

// ------------------------------------------------------------------ RepoView's side of the image
// (here rather than in repo_view.cpp: everything about the image format is in this file).

namespace {

Error damaged_image() {
  return Error(ExitCode::bad_input, "the query image is damaged (an index out of range)");
}

// Where a file's records are: this image, or (an update's image) its base.
const QueryImage& records_of(const QueryImage& img, const QueryImage* base, const image::File& r) {
  if (r.origin < 0 || !base) return img;
  return *base;
}

// A file's record as the image holds it (entity and snippet numbers still the image's).
FileRec file_rec(const QueryImage& img, const image::File& r) {
  FileRec f;
  f.id = r.id;
  f.path = img.str(r.path);
  f.module = img.str(r.module);
  f.package = img.str(r.package);
  f.hash = img.str(r.hash);
  f.language = static_cast<Language>(r.language);
  f.line_count = r.line_count;
  f.n_errors = r.n_errors;
  f.first_entity = r.first_entity;
  f.n_entities = r.n_entities;
  f.first_snippet = r.first_snippet;
  f.n_snippets = r.n_snippets;
  return f;
}

// An image's imports by file (rows are laid out file by file): [begin, end) per file.
std::vector<std::pair<size_t, size_t>> import_ranges(const QueryImage& im) {
  std::vector<std::pair<size_t, size_t>> ranges(im.files().size(), {0, 0});
  for (size_t i = 0; i < im.imports().size(); ++i) {
    int32_t f = im.imports()[i].file;
    if (f < 0 || static_cast<size_t>(f) >= ranges.size()) throw damaged_image();
    if (ranges[f].second == 0) ranges[f].first = i;
    ranges[f].second = i + 1;
  }
  return ranges;
}

// The strings first .. first + n of the image's string lists.
std::vector<std::string> string_list(const QueryImage& src, uint32_t first, uint32_t n) {
  const auto& sl = src.strlist();
  if (static_cast<uint64_t>(first) + n > sl.size()) throw damaged_image();
  std::vector<std::string> out;
  for (uint32_t i = 0; i < n; ++i) out.emplace_back(src.str(sl[first + i]));
  return out;
}

// Entity `r` of file `fi`, whose entities start at `first_entity` in the view (of `total_ents`).
EntityRec entity_rec(const QueryImage& src, const image::Entity& r, int fi, int first_entity, int64_t total_ents) {
  EntityRec e;
  e.id = r.id;
  e.file = fi;
  e.ord = r.ord;
  e.parent = r.parent;
  e.name = src.str(r.name);
  e.qualname = src.str(r.qualname);
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
  e.signature = src.str(r.signature);
  e.docstring = src.str(r.docstring);
  e.decorators = string_list(src, r.decorators, r.n_decorators);
  e.bases = string_list(src, r.bases, r.n_bases);
  if (static_cast<uint64_t>(r.params) + r.n_params > src.params().size()) throw damaged_image();
  for (uint32_t i = 0; i < r.n_params; ++i) {
    const auto& p = src.params()[r.params + i];
    Parameter pa;
    pa.name = src.str(p.name);
    pa.annotation = src.str(p.annotation);
    pa.kind = static_cast<Parameter::Kind>(p.kind);
    pa.has_default = p.has_default != 0;
    e.params.push_back(std::move(pa));
  }
  e.is_async = r.is_async != 0;
  e.doc_len = r.doc_len;
  e.parent_index = e.parent >= 0 ? first_entity + e.parent : -1;
  if (e.parent_index >= total_ents) throw damaged_image();
  return e;
}

Import import_rec(const QueryImage& src, const image::Import& r) {
  Import im;
  im.line = r.line;
  im.scope = r.scope;
  im.module = src.str(r.module);
  im.level = r.level;
  im.name = src.str(r.name);
  im.alias = src.str(r.alias);
  im.star = r.star != 0;
  im.conditional = r.conditional != 0;
  return im;
}

}  // namespace

ImageRecords::ImageRecords(const QueryImage& img) : img_(img) {
  entity_starts_.reserve(img.files().size() + 1);
  snippet_starts_.reserve(img.files().size() + 1);
  int64_t n_ents = 0, n_snips = 0;
  for (const auto& r : img.files()) {
    const QueryImage& src = records_of(img, img.base(), r);
    if (r.first_entity < 0 || r.n_entities < 0 || r.first_snippet < 0 || r.n_snippets < 0 ||
        static_cast<uint64_t>(r.first_entity) + r.n_entities > src.entities().size() ||
        static_cast<uint64_t>(r.first_snippet) + r.n_snippets > src.snippets().size())
      throw damaged_image();
    entity_starts_.push_back(n_ents);
    snippet_starts_.push_back(n_snips);
    n_ents += r.n_entities;
    n_snips += r.n_snippets;
  }
  entity_starts_.push_back(n_ents);
  snippet_starts_.push_back(n_snips);
}

int ImageRecords::file_at(const std::vector<int64_t>& starts, int d) {
  if (d < 0 || d >= starts.back()) throw damaged_image();
  // The last file starting at or before d: files without rows share their successor's start.
  return static_cast<int>(std::upper_bound(starts.begin(), starts.end() - 1, d) - starts.begin()) - 1;
}

const QueryImage& ImageRecords::source(int f) const {
  return records_of(img_, img_.base(), img_.files()[static_cast<size_t>(f)]);
}

const image::Entity& ImageRecords::entity(int d) const {
  const int f = entity_file(d);
  const image::File& r = img_.files()[static_cast<size_t>(f)];
  return source(f).entities()[static_cast<size_t>(r.first_entity + (d - entity_starts_[static_cast<size_t>(f)]))];
}

const image::Snippet& ImageRecords::snippet(int d) const {
  const int f = snippet_file(d);
  const image::File& r = img_.files()[static_cast<size_t>(f)];
  return source(f).snippets()[static_cast<size_t>(r.first_snippet + (d - snippet_starts_[static_cast<size_t>(f)]))];
}

bool RepoView::load_image(const std::string& token) {
  auto img = QueryImage::open(db_path_, token);
  if (!img) return false;
  if (!img->lists_fit()) {
    log_warn("the query image of '{}' is damaged (inverted lists); loading through SQL", db_path_);
    return false;
  }
  try {
    files_.reserve(img->files().size());
    by_path_.reserve(img->files().size());
    by_module_.reserve(img->files().size());
    const QueryImage* base = img->base();
    for (const auto& r : img->files()) files_.push_back(file_rec(*img, r));
    index_files();
    const int n_files = static_cast<int>(files_.size());
    const auto own_imports = import_ranges(*img);
    const auto base_imports = base ? import_ranges(*base) : std::vector<std::pair<size_t, size_t>>{};
    const ImageRecords records(*img);
    const auto total_ents = static_cast<int64_t>(records.n_entities());
    entities_.reserve(records.n_entities());
    snippets_.reserve(records.n_snippets());
    imports_.resize(files_.size());
    for (int fi = 0; fi < n_files; ++fi) {
      const image::File& fr = img->files()[fi];
      const QueryImage& src = records_of(*img, base, fr);
      FileRec& f = files_[fi];
      // Numbered in the current layout (a file without rows keeps first_* = 0, as the view leaves it).
      f.first_entity = f.n_entities ? static_cast<int>(entities_.size()) : 0;
      f.first_snippet = f.n_snippets ? static_cast<int>(snippets_.size()) : 0;
      for (int k = fr.first_entity; k < fr.first_entity + fr.n_entities; ++k)
        entities_.push_back(entity_rec(src, src.entities()[k], fi, f.first_entity, total_ents));
      for (int k = fr.first_snippet; k < fr.first_snippet + fr.n_snippets; ++k) {
        const image::Snippet& r = src.snippets()[k];
        snippets_.push_back(SnippetRec{fi, r.ord, r.start_line, r.end_line, r.doc_len});
      }
      const bool own = &src == img.get();
      const size_t key = own ? static_cast<size_t>(fi) : static_cast<size_t>(fr.origin);
      const auto& ranges = own ? own_imports : base_imports;
      if (key < ranges.size())
        for (size_t i = ranges[key].first; i < ranges[key].second; ++i)
          imports_[fi].push_back(import_rec(src, src.imports()[i]));
    }
    if (entities_.size() != img->entity_postings().doc_len.size() ||
        snippets_.size() != img->snippet_postings().doc_len.size())
      throw damaged_image();
  } catch (const Error& e) {
    log_warn("{} ('{}'); loading through SQL", e.what(), db_path_);
    files_.clear();
    entities_.clear();
    snippets_.clear();
    imports_.clear();
    by_path_.clear();
    by_module_.clear();
    files_by_module_.clear();
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
