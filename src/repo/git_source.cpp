#include "repo/git_source.h"

#include <git2.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "util/cancel.h"
#include "util/dynlib.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace repoctx {
namespace {

// libgit2's entry points, resolved at first use (util/dynlib.h says why not at program start): libgit2 and
// the ten libraries it brings (Kerberos, mbed TLS, libssh2, ...) were mapped and relocated by every command,
// while only the commit-history loaders (make-lca-tasks, the localization sets) read a git history. The
// header gives their exact types.
struct Libgit2 {
  DynLib lib{{"libgit2.so.1.5", "libgit2.so"}, "install libgit2-1.5 (apt)"};
  decltype(&::git_apply_to_tree) git_apply_to_tree = lib.function<decltype(::git_apply_to_tree)>("git_apply_to_tree");
  decltype(&::git_blob_free) git_blob_free = lib.function<decltype(::git_blob_free)>("git_blob_free");
  decltype(&::git_blob_lookup) git_blob_lookup = lib.function<decltype(::git_blob_lookup)>("git_blob_lookup");
  decltype(&::git_blob_rawcontent) git_blob_rawcontent =
      lib.function<decltype(::git_blob_rawcontent)>("git_blob_rawcontent");
  decltype(&::git_blob_rawsize) git_blob_rawsize = lib.function<decltype(::git_blob_rawsize)>("git_blob_rawsize");
  decltype(&::git_buf_dispose) git_buf_dispose = lib.function<decltype(::git_buf_dispose)>("git_buf_dispose");
  decltype(&::git_commit_free) git_commit_free = lib.function<decltype(::git_commit_free)>("git_commit_free");
  decltype(&::git_commit_id) git_commit_id = lib.function<decltype(::git_commit_id)>("git_commit_id");
  decltype(&::git_commit_lookup) git_commit_lookup = lib.function<decltype(::git_commit_lookup)>("git_commit_lookup");
  decltype(&::git_commit_message) git_commit_message =
      lib.function<decltype(::git_commit_message)>("git_commit_message");
  decltype(&::git_commit_parent_id) git_commit_parent_id =
      lib.function<decltype(::git_commit_parent_id)>("git_commit_parent_id");
  decltype(&::git_commit_parentcount) git_commit_parentcount =
      lib.function<decltype(::git_commit_parentcount)>("git_commit_parentcount");
  decltype(&::git_commit_time) git_commit_time = lib.function<decltype(::git_commit_time)>("git_commit_time");
  decltype(&::git_commit_tree) git_commit_tree = lib.function<decltype(::git_commit_tree)>("git_commit_tree");
  decltype(&::git_commit_tree_id) git_commit_tree_id =
      lib.function<decltype(::git_commit_tree_id)>("git_commit_tree_id");
  decltype(&::git_diff_free) git_diff_free = lib.function<decltype(::git_diff_free)>("git_diff_free");
  decltype(&::git_diff_from_buffer) git_diff_from_buffer =
      lib.function<decltype(::git_diff_from_buffer)>("git_diff_from_buffer");
  decltype(&::git_diff_get_delta) git_diff_get_delta =
      lib.function<decltype(::git_diff_get_delta)>("git_diff_get_delta");
  decltype(&::git_diff_num_deltas) git_diff_num_deltas =
      lib.function<decltype(::git_diff_num_deltas)>("git_diff_num_deltas");
  decltype(&::git_diff_tree_to_tree) git_diff_tree_to_tree =
      lib.function<decltype(::git_diff_tree_to_tree)>("git_diff_tree_to_tree");
  decltype(&::git_error_last) git_error_last = lib.function<decltype(::git_error_last)>("git_error_last");
  decltype(&::git_index_free) git_index_free = lib.function<decltype(::git_index_free)>("git_index_free");
  decltype(&::git_libgit2_init) git_libgit2_init = lib.function<decltype(::git_libgit2_init)>("git_libgit2_init");
  decltype(&::git_object_free) git_object_free = lib.function<decltype(::git_object_free)>("git_object_free");
  decltype(&::git_object_id) git_object_id = lib.function<decltype(::git_object_id)>("git_object_id");
  decltype(&::git_object_peel) git_object_peel = lib.function<decltype(::git_object_peel)>("git_object_peel");
  decltype(&::git_oid_fromstr) git_oid_fromstr = lib.function<decltype(::git_oid_fromstr)>("git_oid_fromstr");
  decltype(&::git_oid_tostr) git_oid_tostr = lib.function<decltype(::git_oid_tostr)>("git_oid_tostr");
  decltype(&::git_patch_free) git_patch_free = lib.function<decltype(::git_patch_free)>("git_patch_free");
  decltype(&::git_patch_from_diff) git_patch_from_diff =
      lib.function<decltype(::git_patch_from_diff)>("git_patch_from_diff");
  decltype(&::git_patch_get_delta) git_patch_get_delta =
      lib.function<decltype(::git_patch_get_delta)>("git_patch_get_delta");
  decltype(&::git_patch_get_hunk) git_patch_get_hunk =
      lib.function<decltype(::git_patch_get_hunk)>("git_patch_get_hunk");
  decltype(&::git_patch_get_line_in_hunk) git_patch_get_line_in_hunk =
      lib.function<decltype(::git_patch_get_line_in_hunk)>("git_patch_get_line_in_hunk");
  decltype(&::git_patch_num_hunks) git_patch_num_hunks =
      lib.function<decltype(::git_patch_num_hunks)>("git_patch_num_hunks");
  decltype(&::git_patch_to_buf) git_patch_to_buf = lib.function<decltype(::git_patch_to_buf)>("git_patch_to_buf");
  decltype(&::git_repository_free) git_repository_free =
      lib.function<decltype(::git_repository_free)>("git_repository_free");
  decltype(&::git_repository_open_ext) git_repository_open_ext =
      lib.function<decltype(::git_repository_open_ext)>("git_repository_open_ext");
  decltype(&::git_revparse_single) git_revparse_single =
      lib.function<decltype(::git_revparse_single)>("git_revparse_single");
  decltype(&::git_revwalk_free) git_revwalk_free = lib.function<decltype(::git_revwalk_free)>("git_revwalk_free");
  decltype(&::git_revwalk_new) git_revwalk_new = lib.function<decltype(::git_revwalk_new)>("git_revwalk_new");
  decltype(&::git_revwalk_next) git_revwalk_next = lib.function<decltype(::git_revwalk_next)>("git_revwalk_next");
  decltype(&::git_revwalk_push) git_revwalk_push = lib.function<decltype(::git_revwalk_push)>("git_revwalk_push");
  decltype(&::git_revwalk_simplify_first_parent) git_revwalk_simplify_first_parent =
      lib.function<decltype(::git_revwalk_simplify_first_parent)>("git_revwalk_simplify_first_parent");
  decltype(&::git_tree_entry_bypath) git_tree_entry_bypath =
      lib.function<decltype(::git_tree_entry_bypath)>("git_tree_entry_bypath");
  decltype(&::git_tree_entry_filemode) git_tree_entry_filemode =
      lib.function<decltype(::git_tree_entry_filemode)>("git_tree_entry_filemode");
  decltype(&::git_tree_entry_free) git_tree_entry_free =
      lib.function<decltype(::git_tree_entry_free)>("git_tree_entry_free");
  decltype(&::git_tree_entry_id) git_tree_entry_id = lib.function<decltype(::git_tree_entry_id)>("git_tree_entry_id");
  decltype(&::git_tree_entry_name) git_tree_entry_name =
      lib.function<decltype(::git_tree_entry_name)>("git_tree_entry_name");
  decltype(&::git_tree_entry_type) git_tree_entry_type =
      lib.function<decltype(::git_tree_entry_type)>("git_tree_entry_type");
  decltype(&::git_tree_free) git_tree_free = lib.function<decltype(::git_tree_free)>("git_tree_free");
  decltype(&::git_tree_walk) git_tree_walk = lib.function<decltype(::git_tree_walk)>("git_tree_walk");
};

const Libgit2& lg2() {
  static const Libgit2 g;  // thread-safe initialisation
  return g;
}

void init_libgit2() {
  static std::once_flag once;
  std::call_once(once, [] { lg2().git_libgit2_init(); });
}

std::string last_error() {
  const git_error* e = lg2().git_error_last();
  return e && e->message ? e->message : "unknown libgit2 error";
}

std::string oid_str(const git_oid* id) {
  char buf[GIT_OID_HEXSZ + 1];
  lg2().git_oid_tostr(buf, sizeof buf, id);
  return buf;
}

// RAII for libgit2 objects: one deleter per type (a member of Libgit2).
template <class T, auto Free>
struct Owned {
  T* p = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (p) (lg2().*Free)(p);
  }
  T** out() { return &p; }
  T* get() const { return p; }
};
using Commit = Owned<git_commit, &Libgit2::git_commit_free>;
using Tree = Owned<git_tree, &Libgit2::git_tree_free>;
using Object = Owned<git_object, &Libgit2::git_object_free>;
using Diff = Owned<git_diff, &Libgit2::git_diff_free>;
using Patch = Owned<git_patch, &Libgit2::git_patch_free>;
using Blob = Owned<git_blob, &Libgit2::git_blob_free>;
using Entry = Owned<git_tree_entry, &Libgit2::git_tree_entry_free>;
using Index = Owned<git_index, &Libgit2::git_index_free>;
using Walk = Owned<git_revwalk, &Libgit2::git_revwalk_free>;

struct Buf {
  git_buf b = GIT_BUF_INIT;
  ~Buf() { lg2().git_buf_dispose(&b); }
};

}  // namespace

struct GitRepository::Impl {
  git_repository* repo = nullptr;
  ~Impl() {
    if (repo) lg2().git_repository_free(repo);
  }
  void lookup_commit(const std::string& id, Commit& c) const {
    git_oid oid;
    if (lg2().git_oid_fromstr(&oid, id.c_str()) != 0 || lg2().git_commit_lookup(c.out(), repo, &oid) != 0)
      throw Error(ExitCode::not_found, "commit " + id + " is not in the repository (" + last_error() + ")");
  }
  void commit_tree(const std::string& id, Tree& t) const {
    Commit c;
    lookup_commit(id, c);
    if (lg2().git_commit_tree(t.out(), c.get()) != 0)
      throw Error(ExitCode::bad_input, "cannot read the tree of commit " + id + ": " + last_error());
  }
};

GitRepository::GitRepository(const std::string& path) : impl_(std::make_unique<Impl>()) {
  init_libgit2();
  if (lg2().git_repository_open_ext(&impl_->repo, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0)
    throw Error(ExitCode::not_found,
                "'" + path + "' is not a git repository (" + last_error() + "); pass a clone or a bare repository");
}

GitRepository::~GitRepository() = default;

std::optional<std::string> GitRepository::resolve_commit(const std::string& rev) const {
  Object obj;
  if (rev.empty() || lg2().git_revparse_single(obj.out(), impl_->repo, rev.c_str()) != 0) return std::nullopt;
  Object peeled;
  if (lg2().git_object_peel(peeled.out(), obj.get(), GIT_OBJECT_COMMIT) != 0) return std::nullopt;
  return oid_str(lg2().git_object_id(peeled.get()));
}

CommitInfo GitRepository::commit(const std::string& id) const {
  Commit c;
  impl_->lookup_commit(id, c);
  CommitInfo info;
  info.id = oid_str(lg2().git_commit_id(c.get()));
  info.parents = static_cast<int>(lg2().git_commit_parentcount(c.get()));
  if (info.parents > 0) info.parent = oid_str(lg2().git_commit_parent_id(c.get(), 0));
  const char* msg = lg2().git_commit_message(c.get());
  info.message = msg ? msg : "";
  info.time = static_cast<int64_t>(lg2().git_commit_time(c.get()));
  return info;
}

std::string GitRepository::tree_id(const std::string& commit) const {
  Commit c;
  impl_->lookup_commit(commit, c);
  return oid_str(lg2().git_commit_tree_id(c.get()));
}

std::optional<std::string> GitRepository::read_file(const std::string& commit, const std::string& path) const {
  Tree t;
  impl_->commit_tree(commit, t);
  Entry e;
  if (lg2().git_tree_entry_bypath(e.out(), t.get(), path.c_str()) != 0) return std::nullopt;
  if (lg2().git_tree_entry_type(e.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  Blob b;
  if (lg2().git_blob_lookup(b.out(), impl_->repo, lg2().git_tree_entry_id(e.get())) != 0) return std::nullopt;
  return std::string(static_cast<const char*>(lg2().git_blob_rawcontent(b.get())),
                     static_cast<size_t>(lg2().git_blob_rawsize(b.get())));
}

std::string GitRepository::diff(const std::string& from_commit, const std::string& to_commit,
                                const std::function<bool(const std::string&)>& keep) const {
  Tree a, b;
  impl_->commit_tree(from_commit, a);
  impl_->commit_tree(to_commit, b);
  Diff d;
  git_diff_options opt = GIT_DIFF_OPTIONS_INIT;
  opt.context_lines = 3;
  if (lg2().git_diff_tree_to_tree(d.out(), impl_->repo, a.get(), b.get(), &opt) != 0)
    throw Error(ExitCode::bad_input, "cannot diff " + from_commit + ".." + to_commit + ": " + last_error());
  std::string out;
  size_t n = lg2().git_diff_num_deltas(d.get());
  for (size_t i = 0; i < n; ++i) {
    const git_diff_delta* delta = lg2().git_diff_get_delta(d.get(), i);
    std::string path = delta->new_file.path ? delta->new_file.path : (delta->old_file.path ? delta->old_file.path : "");
    if (keep && !keep(path)) continue;
    Patch p;
    if (lg2().git_patch_from_diff(p.out(), d.get(), i) != 0 || !p.get()) continue;
    Buf buf;
    if (lg2().git_patch_to_buf(&buf.b, p.get()) != 0)
      throw Error(ExitCode::bad_input, "cannot format the diff of " + path + ": " + last_error());
    out.append(buf.b.ptr, buf.b.size);
  }
  return out;
}

bool GitRepository::patch_applies(const std::string& commit, const std::string& patch, std::string* why) const {
  Diff d;
  if (lg2().git_diff_from_buffer(d.out(), patch.data(), patch.size()) != 0) {
    if (why) *why = "the patch is not a unified diff: " + last_error();
    return false;
  }
  Tree t;
  impl_->commit_tree(commit, t);
  Index out;
  if (lg2().git_apply_to_tree(out.out(), impl_->repo, t.get(), d.get(), nullptr) != 0) {
    if (why) *why = "the patch does not apply to " + commit.substr(0, 12) + ": " + last_error();
    return false;
  }
  return true;
}

std::vector<CommitInfo> GitRepository::first_parent_history(const std::string& start, size_t max) const {
  Walk w;
  git_oid oid;
  if (lg2().git_revwalk_new(w.out(), impl_->repo) != 0 || lg2().git_oid_fromstr(&oid, start.c_str()) != 0 ||
      lg2().git_revwalk_push(w.get(), &oid) != 0)
    throw Error(ExitCode::not_found, "cannot walk the history from " + start + ": " + last_error());
  lg2().git_revwalk_simplify_first_parent(w.get());
  std::vector<CommitInfo> out;
  while (out.size() < max && lg2().git_revwalk_next(&oid, w.get()) == 0) {
    throw_if_interrupted("nothing was written");
    out.push_back(commit(oid_str(&oid)));
  }
  return out;
}

namespace {

struct WriteState {
  git_repository* repo;
  fs::path dir;
  const std::function<bool(const std::string&)>* keep;
  const std::function<bool(const std::string&)>* required;
  std::string error;
  std::vector<std::string> missing;
};

int write_entry(const char* root, const git_tree_entry* e, void* payload) {
  auto* st = static_cast<WriteState*>(payload);
  if (interrupted()) return -1;
  if (lg2().git_tree_entry_type(e) != GIT_OBJECT_BLOB || lg2().git_tree_entry_filemode(e) == GIT_FILEMODE_LINK)
    return 0;
  std::string rel = std::string(root) + lg2().git_tree_entry_name(e);
  if (!(*st->keep)(rel)) return 0;
  Blob b;
  if (lg2().git_blob_lookup(b.out(), st->repo, lg2().git_tree_entry_id(e)) != 0) {
    if (*st->required && !(*st->required)(rel)) {
      st->missing.push_back(rel);
      return 0;
    }
    st->error = "cannot read " + rel + ": " + last_error();
    return -1;
  }
  fs::path p = st->dir / rel;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(lg2().git_blob_rawcontent(b.get())),
          static_cast<std::streamsize>(lg2().git_blob_rawsize(b.get())));
  if (!f) {
    st->error = "cannot write " + p.string();
    return -1;
  }
  return 0;
}

}  // namespace

std::string GitRepository::materialize_tree(const std::string& commit, const std::string& cache_root,
                                            const std::function<bool(const std::string&)>& keep,
                                            const std::function<bool(const std::string&)>& required) const {
  std::string tid = tree_id(commit);
  fs::path final_dir = fs::path(cache_root) / tid;
  std::error_code ec;
  if (fs::exists(final_dir / ".repoctx-tree", ec)) return final_dir.string();
  fs::create_directories(cache_root, ec);
  fs::path tmp = fs::path(cache_root) / (tid + ".tmp-" + std::to_string(getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) throw Error(ExitCode::bad_input, "cannot create '" + tmp.string() + "': " + ec.message());
  Tree t;
  impl_->commit_tree(commit, t);
  WriteState st{impl_->repo, tmp, &keep, &required, "", {}};
  if (lg2().git_tree_walk(t.get(), GIT_TREEWALK_PRE, write_entry, &st) != 0) {
    fs::remove_all(tmp, ec);
    throw_if_interrupted("nothing was written");
    throw Error(ExitCode::bad_input, "cannot write the tree of " + commit + ": " + st.error);
  }
  if (!st.missing.empty()) {
    std::ofstream m(tmp / ".repoctx-missing");
    for (const auto& rel : st.missing) m << rel << "\n";
  }
  std::ofstream(tmp / ".repoctx-tree") << commit << "\n";
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);  // another process put the same tree in place first: theirs is identical
    if (!fs::exists(final_dir / ".repoctx-tree"))
      throw Error(ExitCode::bad_input, "cannot move the tree into '" + final_dir.string() + "'");
  }
  return final_dir.string();
}

std::vector<FileDiff> parse_unified_diff(const std::string& patch) {
  init_libgit2();
  std::vector<FileDiff> out;
  if (patch.find_first_not_of(" \t\r\n") == std::string::npos) return out;
  Diff d;
  if (lg2().git_diff_from_buffer(d.out(), patch.data(), patch.size()) != 0)
    throw Error(ExitCode::bad_input, "the patch is not a unified diff: " + last_error());
  size_t n = lg2().git_diff_num_deltas(d.get());
  for (size_t i = 0; i < n; ++i) {
    Patch p;
    if (lg2().git_patch_from_diff(p.out(), d.get(), i) != 0 || !p.get()) continue;
    const git_diff_delta* delta = lg2().git_patch_get_delta(p.get());
    FileDiff f;
    if (delta->status != GIT_DELTA_ADDED && delta->old_file.path) f.old_path = delta->old_file.path;
    if (delta->status != GIT_DELTA_DELETED && delta->new_file.path) f.new_path = delta->new_file.path;
    size_t nh = lg2().git_patch_num_hunks(p.get());
    for (size_t h = 0; h < nh; ++h) {
      const git_diff_hunk* hk = nullptr;
      size_t lines = 0;
      if (lg2().git_patch_get_hunk(&hk, &lines, p.get(), h) != 0 || !hk) continue;
      DiffHunk dh{hk->old_start, hk->old_lines, hk->new_start, hk->new_lines, {}};
      for (size_t l = 0; l < lines; ++l) {
        const git_diff_line* ln = nullptr;
        if (lg2().git_patch_get_line_in_hunk(&ln, p.get(), h, l) != 0 || !ln) continue;
        if (ln->origin != GIT_DIFF_LINE_CONTEXT && ln->origin != GIT_DIFF_LINE_DELETION) continue;
        std::string text(ln->content, ln->content_len);
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        dh.old_text.push_back(std::move(text));
      }
      f.hunks.push_back(std::move(dh));
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace repoctx
