// The "report" package both the retrieval and the agent-tool tests index: pkg/core.py (a class whose
// method uses an imported helper and defines a nested function) and pkg/store.py (what it imports).
#pragma once

namespace repoctx::testing {

inline const char* kCore =
    "import json\n"
    "from .store import Store, load_rows\n"
    "\n"
    "class Report:\n"
    "    \"\"\"A report over rows.\"\"\"\n"
    "    def __init__(self, store):\n"
    "        self.store = store\n"
    "\n"
    "    def summarize(self, key):\n"
    "        \"\"\"Summarize rows by key into a json string.\"\"\"\n"
    "        rows = load_rows(self.store)\n"
    "        def zebra_unique_helper(r):\n"
    "            return r[key]\n"
    "\n"
    "        counts = {}\n"
    "        for r in rows:\n"
    "            counts[zebra_unique_helper(r)] = counts.get(key, 0) + 1\n"
    "        return json.dumps(self.format(counts))\n"
    "\n"
    "    def format(self, counts):\n"
    "        \"\"\"Format counts as rows.\"\"\"\n"
    "        return sorted(counts.items())\n";

inline const char* kStore =
    "class Store:\n"
    "    \"\"\"Keeps rows.\"\"\"\n"
    "    def rows(self):\n"
    "        return []\n"
    "\n"
    "def load_rows(store):\n"
    "    \"\"\"Load rows from a store.\"\"\"\n"
    "    return store.rows()\n";

}  // namespace repoctx::testing
