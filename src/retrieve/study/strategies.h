// Factories of the context-retrieval study's strategies (registered in retrieve/retriever.cpp).
#pragma once

#include <memory>
#include <string>

#include "retrieve/retriever.h"
#include "retrieve/study/acr_search.h"

namespace repoctx {

std::unique_ptr<Retriever> make_study_bm25(const Engine&, const Models&, const RetrieverOptions&);
// tools: "bm25" | "acr"; criterion: "cl" | "tc" | "sr".
std::unique_ptr<Retriever> make_react_study(const Engine&, const Models&, const RetrieverOptions&,
                                            const std::string& tools, const std::string& criterion);
std::unique_ptr<Retriever> make_acr(const Engine&, const Models&, const RetrieverOptions&);
AcrOptions acr_options(const StudyParams& p);

}  // namespace repoctx
