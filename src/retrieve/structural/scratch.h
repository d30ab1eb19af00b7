// Per-entity values of one request in dense arrays indexed by entity id, valid where their stamp is the
// request's: hash maps keyed by entity ids (candidate rows, neighbour votes, co-use counts) were about a
// third of a structural request's CPU on sympy (perf), and a warm server answers many requests per thread.
// One per thread, reused without clearing (a new stamp invalidates everything); a nested use on the same
// thread (none today) gets a fresh one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace repoctx::structural {

struct EntityScratch {
  // The votes of the neighbour functions for one entity: weighted by similarity, all of them, the five most
  // similar, those in the target's file, those in the target's class; and how many voted.
  struct Vote {
    double all, top5, same_file, same_class;
    int voters;
  };
  uint32_t stamp = 0, count_gen = 0;
  std::vector<uint32_t> row_stamp, vote_stamp, units_stamp, count_stamp, local_stamp;
  std::vector<uint32_t> full_ref_stamp, visible_ref_stamp;  // module co-use: what the target's function uses
  std::vector<uint32_t> file_stamp;                         // by file id: the accessible files
  std::vector<int32_t> row, units_begin, units_end, count;
  std::vector<Vote> vote;
  std::vector<double> local_vote;  // same-file neighbours' votes (CandidatePool::local_votes)
  bool busy = false;

  // Starts a request over `n_entities` entities in `n_files` files; co-use counts get a stamp of their own
  // per file (next_count_stamp).
  void begin(size_t n_entities, size_t n_files);
  void next_stamp();
  uint32_t next_count_stamp();
};

// This thread's scratch for the lifetime of a request (a fresh one when it is already in use).
class ScratchLease {
 public:
  ScratchLease(size_t n_entities, size_t n_files);
  ~ScratchLease() { scratch_->busy = false; }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  EntityScratch& operator*() const { return *scratch_; }
  EntityScratch* operator->() const { return scratch_; }

 private:
  std::unique_ptr<EntityScratch> owned_;
  EntityScratch* scratch_;
};

}  // namespace repoctx::structural
