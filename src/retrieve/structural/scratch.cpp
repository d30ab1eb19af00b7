#include "retrieve/structural/scratch.h"

#include <algorithm>

namespace repoctx::structural {

void EntityScratch::begin(size_t n_entities, size_t n_files) {
  if (row.size() < n_entities) {
    for (auto* stamps :
         {&row_stamp, &vote_stamp, &units_stamp, &count_stamp, &local_stamp, &full_ref_stamp, &visible_ref_stamp})
      stamps->resize(n_entities, 0);
    for (auto* values : {&row, &units_begin, &units_end, &count}) values->resize(n_entities, 0);
    vote.resize(n_entities);
    local_vote.resize(n_entities);
  }
  if (file_stamp.size() < n_files) file_stamp.resize(n_files, 0);
  next_stamp();
}

void EntityScratch::next_stamp() {
  if (++stamp == 0) {  // wrapped: every old stamp could look current
    for (auto* stamps :
         {&row_stamp, &vote_stamp, &units_stamp, &file_stamp, &local_stamp, &full_ref_stamp, &visible_ref_stamp})
      std::fill(stamps->begin(), stamps->end(), 0);
    stamp = 1;
  }
}

uint32_t EntityScratch::next_count_stamp() {
  if (++count_gen == 0) {
    std::fill(count_stamp.begin(), count_stamp.end(), 0);
    count_gen = 1;
  }
  return count_gen;
}

ScratchLease::ScratchLease(size_t n_entities, size_t n_files) {
  thread_local EntityScratch mine;
  if (mine.busy) {
    owned_ = std::make_unique<EntityScratch>();
    scratch_ = owned_.get();
  } else {
    scratch_ = &mine;
  }
  scratch_->busy = true;
  scratch_->begin(n_entities, n_files);
}

}  // namespace repoctx::structural
