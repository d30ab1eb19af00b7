// The `repoctx` Python module: the public API (include/repoctx/repoctx.h) with the same parameter names,
// types and defaults as the HTTP and MCP servers (one field table, api/json.h), returning plain Python
// objects (dicts, lists, str, int, float, bool). The GIL is released while the engine works, so Python
// threads can query one Index concurrently.
//
//   import repoctx
//   ix = repoctx.Index("/path/to/repo")            # indexes incrementally, then loads
//   ix.refresh()
//   r = ix.retrieve(target="pkg/mod.py::Cls.meth", strategy="structural", k=10)
//   for hit in r["results"]: print(hit["target"], hit["score"])
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "api/json.h"
#include "repoctx/repoctx.h"
#include "util/error.h"

namespace py = pybind11;
using nlohmann::json;

namespace {

json to_json(const py::handle& o) {
  if (o.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(o)) return o.cast<bool>();
  if (py::isinstance<py::int_>(o)) return o.cast<int64_t>();
  if (py::isinstance<py::float_>(o)) return o.cast<double>();
  if (py::isinstance<py::str>(o)) return o.cast<std::string>();
  if (py::isinstance<py::dict>(o)) {
    json j = json::object();
    for (const auto& [k, v] : o.cast<py::dict>()) j[py::str(k).cast<std::string>()] = to_json(v);
    return j;
  }
  if (py::isinstance<py::list>(o) || py::isinstance<py::tuple>(o)) {
    json j = json::array();
    for (const auto& v : o) j.push_back(to_json(v));
    return j;
  }
  throw repoctx::Error(repoctx::ExitCode::usage, "unsupported argument type " +
                                                     py::str(o.get_type()).cast<std::string>() +
                                                     " (give str, int, float, bool, list or dict)");
}

py::object to_py(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return py::none();
    case json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case json::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case json::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case json::value_t::number_float:
      return py::float_(j.get<double>());
    case json::value_t::string:
      return py::str(j.get<std::string>());
    case json::value_t::array: {
      py::list l;
      for (const auto& v : j) l.append(to_py(v));
      return l;
    }
    case json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_py(v);
      return d;
    }
    default:
      return py::none();
  }
}

// Parses the keyword arguments with the operation's field table (GIL held), runs it without the GIL, and
// converts its JSON form back (GIL held).
template <class P, class F>
py::object call(const std::vector<repoctx::api::Field<P>>& fields, const py::kwargs& kw, F&& fn) {
  P p = repoctx::api::params_from_json(to_json(kw), fields);
  json out;
  {
    py::gil_scoped_release release;
    out = fn(p);
  }
  return to_py(out);
}

repoctx::api::OpenParams open_params(bool refresh, const std::string& db, double max_file_mb, bool follow_symlinks,
                                     bool keep_vendored, bool keep_generated, int threads, int snippet_lines,
                                     const py::dict& models) {
  repoctx::api::OpenParams p;
  p.refresh = refresh;
  p.index = {db, max_file_mb, follow_symlinks, keep_vendored, keep_generated, threads, snippet_lines};
  json m = to_json(models);
  auto& mp = p.models;
  for (const auto& [k, v] : m.items()) {
    auto str = [&]() {
      if (!v.is_string()) throw repoctx::Error(repoctx::ExitCode::usage, "models['" + k + "'] must be a string");
      return v.get<std::string>();
    };
    auto list = [&]() {
      if (v.is_string()) return std::vector<std::string>{v.get<std::string>()};
      if (!v.is_array()) throw repoctx::Error(repoctx::ExitCode::usage, "models['" + k + "'] must be a list of URLs");
      return v.get<std::vector<std::string>>();
    };
    if (k == "config")
      mp.config = str();
    else if (k == "backend")
      mp.backend = str();
    else if (k == "model")
      mp.model = str();
    else if (k == "endpoints")
      mp.endpoints = list();
    else if (k == "embed_backend")
      mp.embed_backend = str();
    else if (k == "embed_model")
      mp.embed_model = str();
    else if (k == "embed_endpoints")
      mp.embed_endpoints = list();
    else if (k == "snippet_embed_backend")
      mp.snippet_embed_backend = str();
    else if (k == "snippet_embed_model")
      mp.snippet_embed_model = str();
    else if (k == "snippet_embed_endpoints")
      mp.snippet_embed_endpoints = list();
    else if (k == "hidden_model")
      mp.hidden_model = str();
    else if (k == "cache")
      mp.cache = str();
    else if (k == "threads" && v.is_number_integer())
      mp.threads = v.get<int>();
    else if (k == "ctx" && v.is_number_integer())
      mp.ctx = v.get<int>();
    else if (k == "no_cache" && v.is_boolean())
      mp.no_cache = v.get<bool>();
    else
      throw repoctx::Error(repoctx::ExitCode::usage,
                           "unknown or mistyped model setting '" + k +
                               "' (config, backend, model, endpoints, embed_backend, embed_model, embed_endpoints, "
                               "snippet_embed_backend, snippet_embed_model, snippet_embed_endpoints, hidden_model, "
                               "threads, ctx, cache, no_cache)");
  }
  return p;
}

}  // namespace

PYBIND11_MODULE(repoctx, m) {
  namespace api = repoctx::api;
  m.doc() = "repoctx: the repository context an LLM needs to write code (index, retrieve, serve)";
  static py::exception<repoctx::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const repoctx::Error& e) {
      // The exception carries the CLI's exit code (2 usage, 3 not found, 4 bad input, 5 LLM, 130 interrupted).
      py::object inst = py::handle(error.ptr())(e.what());
      inst.attr("exit_code") = static_cast<int>(e.code());
      PyErr_SetObject(error.ptr(), inst.ptr());
    }
  });

  py::class_<api::Index>(m, "Index", "An indexed repository, loaded; every method is safe to call from threads.")
      .def(py::init([](const std::string& repo, bool refresh, const std::string& db, double max_file_mb,
                       bool follow_symlinks, bool keep_vendored, bool keep_generated, int threads, int snippet_lines,
                       const py::dict& models) {
             auto p = open_params(refresh, db, max_file_mb, follow_symlinks, keep_vendored, keep_generated, threads,
                                  snippet_lines, models);
             py::gil_scoped_release release;
             return std::make_unique<api::Index>(repo, p);
           }),
           py::arg("repo"), py::kw_only(), py::arg("refresh") = true, py::arg("db") = "", py::arg("max_file_mb") = 4.0,
           py::arg("follow_symlinks") = false, py::arg("keep_vendored") = false, py::arg("keep_generated") = false,
           py::arg("threads") = 0, py::arg("snippet_lines") = 15, py::arg("models") = py::dict(),
           "Index `repo` (incrementally; refresh=False loads the index as it is) and load it. `models`: "
           "{'model': 'x.gguf'} or {'backend': 'openai', 'endpoints': [...], 'model': name}, ... (docs/LLM.md).")
      .def(
          "refresh",
          [](api::Index& ix, bool force) {
            json out;
            {
              py::gil_scoped_release release;
              out = api::to_json(ix.refresh(force));
            }
            return to_py(out);
          },
          py::arg("force") = false, "Index what changed; a new snapshot serves when anything did. Returns stats.")
      .def(
          "retrieve",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::retrieve_fields(), kw,
                        [&](const api::RetrieveParams& p) { return api::to_json(ix.retrieve(p)); });
          },
          "retrieve(target=None, query=None, strategy='sparse', k=20, with_text=False, ...) -> dict")
      .def(
          "localize",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::localize_fields(), kw,
                        [&](const api::LocalizeParams& p) { return api::to_json(ix.localize(p)); });
          },
          "localize(request, strategy='study-bm25', with_text=False, params=None) -> dict: the line ranges a "
          "change request needs (the context-retrieval study; study-bm25 needs no model)")
      .def(
          "symbols",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::symbols_fields(), kw,
                        [&](const api::SymbolsParams& p) { return api::to_json(ix.symbols(p)); });
          },
          "symbols(kind=None, file=None, name=None, limit=1000) -> list of dicts")
      .def(
          "files",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::files_fields(), kw, [&](const api::FilesParams& p) { return api::to_json(ix.files(p)); });
          },
          "files(errors_only=False) -> list of dicts")
      .def(
          "snippets",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::snippets_fields(), kw,
                        [&](const api::SnippetsParams& p) { return api::to_json(ix.snippets(p)); });
          },
          "snippets(file, dependency=False) -> list of dicts")
      .def(
          "read",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::read_fields(), kw, [&](const api::ReadParams& p) { return json(ix.read(p).text); });
          },
          "read(path, start_line=1, end_line=0) -> numbered lines (str); only files of the repository")
      .def(
          "grep",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::grep_fields(), kw, [&](const api::GrepParams& p) { return json(ix.grep(p).text); });
          },
          "grep(pattern, path='', fixed=False) -> 'path:line: text' lines (str)")
      .def(
          "generate",
          [](const api::Index& ix, const py::kwargs& kw) {
            return call(api::generate_fields(), kw,
                        [&](const api::GenerateParams& p) { return api::to_json(ix.generate(p)); });
          },
          "generate(target, method='projagent', ...) -> dict (needs a model; writes nothing)")
      .def("info", [](const api::Index& ix) { return to_py(api::to_json(ix.info())); })
      .def("cache_stats", [](const api::Index& ix) { return to_py(api::to_json(ix.cache_stats())); })
      .def_property_readonly("repo", &api::Index::repo);
  m.def(
      "strategies", [] { return to_py(api::to_json(api::strategies())); },
      "the retrieval strategies: name, description, needs, and what a hit's score means");
  m.def(
      "localize_strategies", [] { return to_py(api::to_json(api::localize_strategies())); },
      "the strategies Index.localize runs");
}
