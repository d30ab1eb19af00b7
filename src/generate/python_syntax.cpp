#include "generate/python_syntax.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"

extern char** environ;

namespace repoctx {

using nlohmann::json;

namespace {

// The helper: announces its version, then answers each "<byte count>\n<source>" with one JSON line.
// compile() runs the parser and the symbol table (nonlocal without binding, return outside a function,
// ...): everything the interpreter would refuse before running the module. Warnings (invalid escapes,
// `is` with a literal) are not errors and are silenced.
constexpr const char* kHelper = R"PY(
import sys, json, warnings
warnings.simplefilter("ignore")
inp, out = sys.stdin.buffer, sys.stdout
out.write(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3]}) + "\n")
out.flush()
while True:
    line = inp.readline()
    if not line:
        break
    src = inp.read(int(line))
    try:
        compile(src, "<candidate>", "exec", dont_inherit=True)
        r = {"ok": True}
    except SyntaxError as e:
        r = {"ok": False, "msg": str(e.msg), "line": e.lineno or 0, "col": e.offset or 0,
             "text": (e.text or "").rstrip("\r\n")}
    except (ValueError, MemoryError, RecursionError, OverflowError) as e:
        r = {"ok": False, "msg": type(e).__name__ + ": " + str(e), "line": 0, "col": 0, "text": ""}
    out.write(json.dumps(r) + "\n")
    out.flush()
)PY";

constexpr int kAnswerTimeoutMs = 60000;  // compile() of any real file takes far less
constexpr size_t kMemoEntries = 512;

bool executable(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t at = 0; at <= dirs.size();) {
    size_t colon = dirs.find(':', at);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(at, colon - at);
    std::string cand = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable(cand)) return cand;
    at = colon + 1;
  }
  return "";
}

// Writes all of `data`; a helper that died gives EPIPE, not a SIGPIPE that would end this process (the
// signal is blocked in this thread around the write and a pending one consumed).
bool write_all(int fd, const std::string& data) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  size_t off = 0;
  bool ok = true;
  while (off < data.size()) {
    ssize_t w = ::write(fd, data.data() + off, data.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ok = false;
      if (errno == EPIPE) {
        timespec zero{};
        sigtimedwait(&pipe_set, nullptr, &zero);
      }
      break;
    }
    off += static_cast<size_t>(w);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

// One line from `fd` (without the newline), within the timeout; nullopt on EOF, error or timeout.
std::optional<std::string> read_line(int fd, std::string& pending) {
  for (;;) {
    auto nl = pending.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      return line;
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, kAnswerTimeoutMs);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    pending.append(buf, static_cast<size_t>(n));
  }
}

std::optional<PythonSyntaxError> verdict_from(const json& j) {
  if (j.value("ok", false)) return std::nullopt;
  PythonSyntaxError e;
  e.message = j.value("msg", std::string("invalid syntax"));
  e.line = j.value("line", 0);
  e.column = j.value("col", 0);
  e.text = j.value("text", std::string());
  return e;
}

}  // namespace

PythonCompiler::PythonCompiler(std::string interpreter) : interpreter_(std::move(interpreter)) {}

PythonCompiler::~PythonCompiler() {
  stop();
}

void PythonCompiler::start() {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw Error(ExitCode::failure, "pipe failed starting " + interpreter_);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::string a0 = interpreter_, a1 = "-I", a2 = "-S", a3 = "-c", a4 = kHelper;
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, interpreter_.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    throw Error(ExitCode::failure, "cannot start '" + interpreter_ + "' for the syntax check");
  }
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  pending_.clear();
  auto hello = read_line(from_child_, pending_);
  json j = hello ? json::parse(*hello, nullptr, false) : json();
  if (!j.is_object() || !j.contains("version")) {
    stop();
    throw Error(ExitCode::failure, "'" + interpreter_ + "' did not start as a Python 3 interpreter");
  }
  version_ = j["version"].get<std::string>();
}

void PythonCompiler::stop() {
  if (to_child_ >= 0) ::close(to_child_);  // EOF: the helper's loop ends
  if (from_child_ >= 0) ::close(from_child_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);  // a hung helper must not hang us; a finished one ignores it
    int st = 0;
    ::waitpid(pid_, &st, 0);
  }
  pid_ = to_child_ = from_child_ = -1;
}

std::string PythonCompiler::version() {
  std::lock_guard lk(mu_);
  if (pid_ < 0) start();
  return version_;
}

std::optional<PythonSyntaxError> PythonCompiler::ask(const std::string& source) {
  for (int attempt = 0; attempt < 2; ++attempt) {  // a helper that died is restarted once
    if (pid_ < 0) start();
    std::optional<std::string> line;
    if (write_all(to_child_, std::to_string(source.size()) + "\n" + source)) line = read_line(from_child_, pending_);
    json j = line ? json::parse(*line, nullptr, false) : json();
    if (j.is_object() && j.contains("ok")) return verdict_from(j);
    stop();
  }
  throw Error(ExitCode::failure, "the syntax check with '" + interpreter_ + "' stopped answering");
}

std::optional<PythonSyntaxError> PythonCompiler::check(const std::string& source) {
  std::string key = content_hash(source);
  std::lock_guard lk(mu_);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  auto v = ask(source);
  if (memo_.size() >= kMemoEntries) memo_.clear();
  memo_.emplace(key, v);
  return v;
}

std::optional<PythonSyntaxError> PythonCompiler::check_in_new_process(const std::string& source) {
  PythonCompiler once(interpreter_);
  return once.ask(source);
}

std::string resolve_python(const std::string& configured) {
  if (!configured.empty()) {
    std::string p = on_path(configured);
    if (p.empty())
      throw Error(ExitCode::not_found, "python interpreter '" + configured +
                                           "' (--python or the config's \"python\") not found or not executable");
    return p;
  }
  if (const char* env = std::getenv("REPOCTX_PYTHON"); env && *env) {
    std::string p = on_path(env);
    if (p.empty())
      throw Error(ExitCode::not_found,
                  "REPOCTX_PYTHON names '" + std::string(env) + "', which is not found or not executable");
    return p;
  }
  return on_path("python3");
}

PythonCompiler* python_compiler(const std::string& configured) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<PythonCompiler>> compilers;
  static bool warned = false;
  std::string path = resolve_python(configured);
  std::lock_guard lk(mu);
  if (path.empty()) {
    if (!warned)
      log_warn(
          "no python3 found (--python, the config's \"python\", $REPOCTX_PYTHON, PATH): the syntax check falls back "
          "to tree-sitter, which accepts code Python rejects (`print \"x\"`)");
    warned = true;
    return nullptr;
  }
  auto& c = compilers[path];
  if (!c) c = std::make_unique<PythonCompiler>(path);
  return c.get();
}

}  // namespace repoctx
