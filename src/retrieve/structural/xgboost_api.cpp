#include "retrieve/structural/xgboost_api.h"

#include <limits>
#include <mutex>

#include "util/error.h"

namespace repoctx {

const XgboostApi& xgboost_api() {
  static const XgboostApi x;  // thread-safe initialisation
  return x;
}

std::string xgboost_error() {
  std::string e = xgboost_api().XGBGetLastError();
  return e.substr(0, e.find('\n'));
}

void xgboost_check(int rc, const std::string& what) {
  if (rc != 0) throw Error(ExitCode::failure, "xgboost: " + what + " failed: " + xgboost_error());
}

void xgboost_quiet() {
  static std::once_flag once;
  std::call_once(once,
                 [] { xgboost_check(xgboost_api().XGBSetGlobalConfig(R"({"verbosity": 0})"), "setting verbosity"); });
}

void xgboost_set_param(BoosterHandle b, const char* name, const std::string& value) {
  xgboost_check(xgboost_api().XGBoosterSetParam(b, name, value.c_str()), std::string("setting ") + name);
}

XgbMatrix::XgbMatrix(const float* x, size_t rows, size_t cols, int threads) {
  xgboost_check(
      xgboost_api().XGDMatrixCreateFromMat_omp(x, rows, cols, std::numeric_limits<float>::quiet_NaN(), &h, threads),
      "building a matrix");
}

XgbMatrix::~XgbMatrix() {
  if (h) xgboost_api().XGDMatrixFree(h);
}

}  // namespace repoctx
