// XGBoost's C API as repoctx calls it: resolved at first use from the shared library, errors turned into
// repoctx errors. The structural ranker predicts through it and its trainer (eval/gbdt_training.h) fits
// through it.
#pragma once

#include <xgboost/c_api.h>

#include <string>

#include "util/dynlib.h"

namespace repoctx {

// XGBoost's C API, resolved at first use (util/dynlib.h says why not at program start): libxgboost and
// libdmlc carry thousands of symbol relocations that every command would pay before main(), also the ones
// that never rank with trees. The header gives the exact types.
struct XgboostApi {
  DynLib lib{{"libxgboost.so.0", "libxgboost.so"}, "install libxgboost0 (apt)"};
  decltype(&::XGBGetLastError) XGBGetLastError = lib.function<decltype(::XGBGetLastError)>("XGBGetLastError");
  decltype(&::XGBSetGlobalConfig) XGBSetGlobalConfig =
      lib.function<decltype(::XGBSetGlobalConfig)>("XGBSetGlobalConfig");
  decltype(&::XGDMatrixCreateFromMat_omp) XGDMatrixCreateFromMat_omp =
      lib.function<decltype(::XGDMatrixCreateFromMat_omp)>("XGDMatrixCreateFromMat_omp");
  decltype(&::XGDMatrixFree) XGDMatrixFree = lib.function<decltype(::XGDMatrixFree)>("XGDMatrixFree");
  decltype(&::XGBoosterSetParam) XGBoosterSetParam = lib.function<decltype(::XGBoosterSetParam)>("XGBoosterSetParam");
  decltype(&::XGBoosterFree) XGBoosterFree = lib.function<decltype(::XGBoosterFree)>("XGBoosterFree");
  decltype(&::XGDMatrixSetFloatInfo) XGDMatrixSetFloatInfo =
      lib.function<decltype(::XGDMatrixSetFloatInfo)>("XGDMatrixSetFloatInfo");
  decltype(&::XGDMatrixSetUIntInfo) XGDMatrixSetUIntInfo =
      lib.function<decltype(::XGDMatrixSetUIntInfo)>("XGDMatrixSetUIntInfo");
  decltype(&::XGBoosterCreate) XGBoosterCreate = lib.function<decltype(::XGBoosterCreate)>("XGBoosterCreate");
  decltype(&::XGBoosterUpdateOneIter) XGBoosterUpdateOneIter =
      lib.function<decltype(::XGBoosterUpdateOneIter)>("XGBoosterUpdateOneIter");
  decltype(&::XGBoosterPredictFromDense) XGBoosterPredictFromDense =
      lib.function<decltype(::XGBoosterPredictFromDense)>("XGBoosterPredictFromDense");
  decltype(&::XGBoosterSaveModelToBuffer) XGBoosterSaveModelToBuffer =
      lib.function<decltype(::XGBoosterSaveModelToBuffer)>("XGBoosterSaveModelToBuffer");
  decltype(&::XGBoosterLoadModelFromBuffer) XGBoosterLoadModelFromBuffer =
      lib.function<decltype(::XGBoosterLoadModelFromBuffer)>("XGBoosterLoadModelFromBuffer");
  decltype(&::XGBoosterGetNumFeature) XGBoosterGetNumFeature =
      lib.function<decltype(::XGBoosterGetNumFeature)>("XGBoosterGetNumFeature");
  decltype(&::XGBoostVersion) XGBoostVersion = lib.function<decltype(::XGBoostVersion)>("XGBoostVersion");
};

// The library's functions, loaded on the first call (throws Error naming the package when it is missing).
const XgboostApi& xgboost_api();
// The first line of XGBGetLastError() (the rest is a native stack trace that says nothing to a user).
std::string xgboost_error();
// Throws Error(failure) "xgboost: <what> failed: <reason>" when rc is not 0.
void xgboost_check(int rc, const std::string& what);
// Silences XGBoost's own warnings on stderr (once per process): repoctx reports its own errors.
void xgboost_quiet();
void xgboost_set_param(BoosterHandle b, const char* name, const std::string& value);

// A dense matrix handle, freed on scope exit. NaN marks a missing value, so 0 (a feature that does not fire)
// is an ordinary value. `threads` 1 for a query's pool: waking OpenMP workers for a few hundred rows is not
// worth it.
struct XgbMatrix {
  DMatrixHandle h = nullptr;
  XgbMatrix(const float* x, size_t rows, size_t cols, int threads);
  ~XgbMatrix();
  XgbMatrix(const XgbMatrix&) = delete;
  XgbMatrix& operator=(const XgbMatrix&) = delete;
};

}  // namespace repoctx
