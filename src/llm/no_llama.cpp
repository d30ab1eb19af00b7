// Builds without llama.cpp (-DREPOCTX_WITH_LLAMA=OFF): the llama backend reports how to get it.
#include "llm/llama_backend.h"
#include "util/error.h"

namespace repoctx {

std::unique_ptr<LlmBackend> make_llama_backend(const LlamaOptions&) {
  throw Error(ExitCode::usage,
              "this repoctx was built without llama.cpp (REPOCTX_WITH_LLAMA=OFF): rebuild after "
              "scripts/setup.sh, or use an OpenAI-compatible server (--endpoint)");
}

std::string model_file_identity(const std::string& path) {
  return "file:" + path;
}

}  // namespace repoctx
