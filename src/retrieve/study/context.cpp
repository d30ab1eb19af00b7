#include "retrieve/study/context.h"

#include <algorithm>

#include "util/text.h"
#include "util/token_count.h"

namespace repoctx {

void GatheredContext::add(int doc, int first, int last) {
  first = std::max(first, 1);
  last = std::min(last, corpus_.line_count(doc));
  if (last < first) return;
  const std::string& content = corpus_.content(doc);
  auto starts = line_starts(content);
  auto& set = lines_[doc];
  for (int l = first; l <= last; ++l)
    if (set.insert(l).second) tokens_ += count_tokens(line_range(content, starts, l, l), counter_);
  if (set.empty()) lines_.erase(doc);
}

int innermost_entity(const RepoView& v, int file, int first, int last) {
  const auto& fr = v.files()[file];
  int best = -1;
  for (int e = fr.first_entity; e < fr.first_entity + fr.n_entities; ++e) {
    const auto& en = v.entities()[e];
    if (!is_callable(en.kind) && !is_type(en.kind)) continue;
    if (en.decorated_start_line <= first && en.end_line >= last) {
      if (best < 0 || en.end_line - en.decorated_start_line <=
                          v.entities()[best].end_line - v.entities()[best].decorated_start_line)
        best = e;
    }
  }
  return best;
}

std::vector<Hit> GatheredContext::hits() const {
  std::vector<Hit> out;
  for (const auto& [doc, set] : lines_) {
    int file = corpus_.file(doc);
    for (auto it = set.begin(); it != set.end();) {
      int first = *it, last = *it;
      for (++it; it != set.end() && *it == last + 1; ++it) last = *it;
      Hit h;
      h.type = Hit::Type::snippet;
      h.file = file;
      h.start_line = first;
      h.end_line = last;
      if (file >= 0) {
        h.entity = innermost_entity(corpus_.engine().view(), file, first, last);
      } else {
        const std::string& content = corpus_.content(doc);
        h.path = corpus_.path(doc);
        h.text = std::string(line_range(content, line_starts(content), first, last));
      }
      h.score = 1.0;
      out.push_back(h);
    }
  }
  return out;
}

const std::string& GatheredContext::path_of(const Hit& h) const {
  return hit_path(corpus_.engine().view(), h);
}

std::string GatheredContext::text_of(const Hit& h) const {
  if (h.file < 0) return h.text;
  const std::string& content = corpus_.content(h.file);
  return std::string(line_range(content, line_starts(content), h.start_line, h.end_line));
}

nlohmann::json GatheredContext::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Hit& h : hits()) j[path_of(h)].push_back({h.start_line, h.end_line});
  return j;
}

}  // namespace repoctx
