// OpenAI's cl100k_base tokenizer (GPT-3.5/GPT-4), exactly: the context-retrieval study counts its context
// lengths ("Avg. CL", the 500-token CL criterion and the baseline's budget) in these tokens.
//
// The byte-pair ranks come from the pinned npm package `tiktoken` (encoders/cl100k_base.json), built into the
// binary (cmake/embed_cl100k.cmake). Encoding is tiktoken's `encode_ordinary`: special-token text such as
// "<|endoftext|>" is ordinary text. Hand-written: no C or C++ library in Debian or npm implements cl100k; the
// reference implementation (tiktoken's Rust core, compiled to WebAssembly in the same npm package) agrees
// token for token (tests/integration/tokenizer_reference.py).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace repoctx::cl100k {

// Token ids of `text`. Invalid UTF-8 bytes are pieces of their own.
std::vector<uint32_t> encode(std::string_view text);

// The number of tokens of `text` (no ids kept).
int count(std::string_view text);

// The longest prefix of `text` holding at most `max_tokens` tokens, cut between pre-tokenizer pieces.
std::string_view truncate(std::string_view text, int max_tokens);

// The vocabulary size (100,256 byte-pair ranks): loads the ranks, throwing Error(internal) if the embedded
// encoding is not the one this pre-tokenizer implements.
size_t vocabulary_size();

}  // namespace repoctx::cl100k
