// Helpers for the io tests: a scratch directory and whole-file byte access through the C++
// library (deliberately not through the code under test).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "weft/io/durable_file.h"

namespace weft::io::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string pattern =
        JoinPath(base != nullptr && *base != '\0' ? base : "/tmp", "weft_io_test.XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~TempDir() {
    Status status = RemoveAll(path_);
    if (!status.ok()) ADD_FAILURE() << status;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return JoinPath(path_, name); }

 private:
  std::string path_;
};

inline std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// The first interpreter that has NumPy and crc32c: $WEFT_PYTHON3, python3 on PATH, or the
// system's (a pyenv python3 on PATH may lack Debian's python3-numpy).
inline std::string FindPython() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("WEFT_PYTHON3"); env != nullptr && *env != '\0') {
    candidates.push_back(env);
  }
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  for (const std::string& python : candidates) {
    const std::string probe = python + " -c 'import numpy, crc32c' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return "python3";  // its output will say what to install
}

// Runs src/weft/io/read_safetensors.py (under `source_dir`) on `path` with FindPython(): its
// output, or an error quoting it when the script fails.
inline StatusOr<std::string> RunPythonReader(const std::string& source_dir,
                                             const std::string& path) {
  const std::string command =
      FindPython() + " '" + source_dir + "/src/weft/io/read_safetensors.py' '" + path + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return Internal("cannot run ", command);
  std::string output;
  char chunk[4096];
  for (size_t n; (n = fread(chunk, 1, sizeof(chunk), pipe)) > 0;) output.append(chunk, n);
  const int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Internal(command, " failed (install python3-numpy and python3-crc32c if missing):\n",
                    output);
  }
  return output;
}

}  // namespace weft::io::testing
