// `sparse` for a plain-text query answered straight from the query image (index/query_image.h), without a
// RepoView: what a new process answering one query does. A view decodes every record first (the Linux tree's
// 4.9 M entities: ~5 s and 4 GB), while the query reads a few inverted lists and decodes its k hits. Hits,
// order and scores equal the `sparse` retriever's over the same index (tests compare the two).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "repo/model.h"
#include "retrieve/retriever.h"

namespace repoctx {

struct ImageHit {
  Hit::Type type = Hit::Type::entity;
  std::string path;
  std::string qualname;  // entities only
  EntityKind kind = EntityKind::function;
  int start_line = 0, end_line = 0;
  double score = 0;
  std::string text;  // the hit's lines, when asked for
};

// Null when the index has no query image that matches it (the caller opens an Engine instead). `drop_file`
// (may be empty) rejects hits by their file's path before the top k are chosen, as run_filtered does.
std::optional<std::vector<ImageHit>> sparse_from_image(const std::string& db_path, const std::string& text, int top_k,
                                                       const RetrieverOptions& o, bool with_text,
                                                       const std::function<bool(const std::string&)>& drop_file);

}  // namespace repoctx
