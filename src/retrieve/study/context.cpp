#include "retrieve/study/context.h"

#include <algorithm>

#include "util/text.h"
#include "util/token_count.h"

namespace repoctx {

void GatheredContext::add(int file, int first, int last) {
  const auto& f = e_.view().files()[file];
  first = std::max(first, 1);
  last = std::min(last, f.line_count);
  if (last < first) return;
  const std::string& content = e_.view().content(file);
  auto starts = line_starts(content);
  auto& set = lines_[file];
  for (int l = first; l <= last; ++l)
    if (set.insert(l).second) tokens_ += count_tokens(line_range(content, starts, l, l), counter_);
  if (set.empty()) lines_.erase(file);
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
  for (const auto& [file, set] : lines_) {
    for (auto it = set.begin(); it != set.end();) {
      int first = *it, last = *it;
      for (++it; it != set.end() && *it == last + 1; ++it) last = *it;
      Hit h;
      h.type = Hit::Type::snippet;
      h.file = file;
      h.start_line = first;
      h.end_line = last;
      h.entity = innermost_entity(e_.view(), file, first, last);
      h.score = 1.0;
      out.push_back(h);
    }
  }
  return out;
}

nlohmann::json GatheredContext::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Hit& h : hits()) j[e_.view().files()[h.file].path].push_back({h.start_line, h.end_line});
  return j;
}

}  // namespace repoctx
