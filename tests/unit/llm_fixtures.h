// Shared fixtures for LLM tests: the tiny random-weight model (made once per test process) and real
// llama-server processes on 127.0.0.1.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <curl/curl.h>
#include <fcntl.h>

#include "llm/test_model.h"

extern char** environ;

namespace repoctx::testing {

inline const std::string& tiny_model_path() {
  static const std::string path = [] {
    auto dir = std::filesystem::temp_directory_path() / ("repoctx-tiny-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    TestModelSpec s;
    s.vocab_path = default_vocab_path();
    s.out_path = (dir / "tiny-qwen2.gguf").string();
    write_test_model(s);
    return s.out_path;
  }();
  return path;
}

// The same tiny model with an output bias toward printable-ASCII tokens, for llama-server: its reply
// parsers reject text ending inside a UTF-8 sequence, which random byte-level tokens produce.
inline const std::string& tiny_ascii_model_path() {
  static const std::string path = [] {
    auto dir = std::filesystem::temp_directory_path() / ("repoctx-tiny-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    TestModelSpec s;
    s.vocab_path = default_vocab_path();
    s.out_path = (dir / "tiny-qwen2-ascii.gguf").string();
    s.ascii_only = true;
    write_test_model(s);
    return s.out_path;
  }();
  return path;
}

inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

inline long http_get_status(const std::string& url) {
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
  curl_easy_setopt(
      c, CURLOPT_WRITEFUNCTION, +[](char*, size_t s, size_t n, void*) { return s * n; });
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return status;
}

// A real llama-server (built from the same llama.cpp) serving the tiny model on 127.0.0.1.
class LlamaServer {
 public:
  explicit LlamaServer(std::vector<std::string> extra = {}) {
    port_ = free_port();
    std::vector<std::string> args = {REPOCTX_LLAMA_SERVER,
                                     "-m",
                                     tiny_ascii_model_path(),
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(port_),
                                     "-c",
                                     "4096",
                                     "-t",
                                     "2",
                                     "--no-webui"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    std::string log =
        (std::filesystem::temp_directory_path() / ("repoctx-llama-server-" + std::to_string(port_) + ".log")).string();
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
      if (http_get_status(url() + "/health") == 200) {
        ready_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~LlamaServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st;
      waitpid(pid_, &st, 0);
    }
  }
  bool ready() const { return ready_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string v1() const { return url() + "/v1"; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  bool ready_ = false;
};

}  // namespace repoctx::testing
