// The three string helpers llama.cpp's json-schema-to-grammar.cpp takes from common.cpp. Written here
// because common.cpp cannot be compiled alone (it pulls in all of llama-common, whose vendored
// cpp-httplib and nlohmann clash with Debian's copies when linked into one program); the converter
// itself is compiled from llama.cpp's source (see src/CMakeLists.txt).
#include <string>
#include <vector>

std::string string_join(const std::vector<std::string>& values, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += separator;
    out += values[i];
  }
  return out;
}

std::vector<std::string> string_split(const std::string& str, const std::string& delimiter) {
  std::vector<std::string> parts;
  size_t start = 0, end = str.find(delimiter);
  while (end != std::string::npos) {
    parts.push_back(str.substr(start, end - start));
    start = end + delimiter.length();
    end = str.find(delimiter, start);
  }
  parts.push_back(str.substr(start));
  return parts;
}

std::string string_repeat(const std::string& str, size_t n) {
  std::string out;
  out.reserve(str.size() * n);
  for (size_t i = 0; i < n; ++i) out += str;
  return out;
}
