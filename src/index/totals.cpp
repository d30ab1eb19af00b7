#include "index/totals.h"

#include "util/sqlite.h"

namespace repoctx {

IndexTotals index_totals(const std::string& db_path) {
  sql::Db db(db_path, true);
  sql::Transaction read(db, false);  // one snapshot for the four counts
  auto count = [&](const char* q) {
    sql::Stmt s(db, q);
    return s.step() ? s.i64(0) : 0;
  };
  IndexTotals t;
  t.files = count("SELECT count(*) FROM files");
  t.entities = count("SELECT count(*) FROM entities");
  t.references = count("SELECT coalesce(sum(count), 0) FROM refs");
  t.snippets = count("SELECT count(*) FROM snippets");
  read.commit();
  return t;
}

}  // namespace repoctx
