# Writes a C++ file holding models/structural.json as a string constant (empty when the file is missing).
set(text "")
if(EXISTS "${MODEL}")
  file(READ "${MODEL}" text)
endif()
# A raw string literal with a delimiter no JSON text contains.
file(WRITE "${OUT}.tmp" "namespace repoctx {\nextern const char* const kDefaultStructuralModel;\nconst char* const kDefaultStructuralModel = R\"repoctx_model(${text})repoctx_model\";\n}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
