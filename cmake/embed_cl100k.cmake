# Writes a C++ file holding tiktoken's cl100k_base encoding (encoders/cl100k_base.json of the pinned npm package
# `tiktoken`: the pre-tokenizer pattern and the 100,256 byte-pair ranks) as one raw string literal, so that the
# binary counts GPT-3.5/GPT-4 tokens with nothing to read or download at run time.
file(READ "${JSON}" body)
string(FIND "${body}" ")cl100k_data\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${JSON} contains the raw-string delimiter of the embedded copy")
endif()
set(out "namespace repoctx {\nextern const char* const kCl100kBaseJson;\n")
string(APPEND out "const char* const kCl100kBaseJson = R\"cl100k_data(${body})cl100k_data\";\n}  // namespace repoctx\n")
file(WRITE "${OUT}.tmp" "${out}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
