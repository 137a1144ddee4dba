// Loading and applying transport security; see transport_security.h.
#include "weft/distributed/rpc/transport_security.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "weft/core/str_util.h"

namespace weft {
namespace {

StatusOr<std::string> ReadSecret(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(flag, " ", path, ": cannot be read");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return InvalidArgument(flag, " ", path, ": read failed");
  return contents.str();
}

std::string Environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// A token file usually ends in a newline an editor added; it is not part of the secret.
std::string TrimLineEnd(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

StatusOr<TransportSecurity> LoadTransportSecurity(const TransportSecurityFiles& files) {
  TransportSecurity security;
  const int tls_files = !files.certificate.empty() + !files.private_key.empty() + !files.ca.empty();
  if (tls_files != 0 && tls_files != 3) {
    return InvalidArgument(
        "TLS needs all of --tls-cert, --tls-key and --tls-ca (mutual TLS: each side shows a "
        "certificate the CA signed); missing:",
        files.certificate.empty() ? " --tls-cert" : "",
        files.private_key.empty() ? " --tls-key" : "", files.ca.empty() ? " --tls-ca" : "");
  }
  if (tls_files == 3) {
    WEFT_ASSIGN_OR_RETURN(security.certificate_chain, ReadSecret("--tls-cert", files.certificate));
    WEFT_ASSIGN_OR_RETURN(security.private_key, ReadSecret("--tls-key", files.private_key));
    WEFT_ASSIGN_OR_RETURN(security.root_certificates, ReadSecret("--tls-ca", files.ca));
    for (const auto& [flag, path, pem] :
         {std::tuple{"--tls-cert", files.certificate, &security.certificate_chain},
          std::tuple{"--tls-key", files.private_key, &security.private_key},
          std::tuple{"--tls-ca", files.ca, &security.root_certificates}}) {
      if (pem->find("-----BEGIN ") == std::string::npos) {
        return InvalidArgument(flag, " ", path, ": not a PEM file");
      }
    }
  }
  if (!files.token_file.empty()) {
    WEFT_ASSIGN_OR_RETURN(std::string token, ReadSecret("--token-file", files.token_file));
    security.token = TrimLineEnd(std::move(token));
    if (security.token.empty()) {
      return InvalidArgument("--token-file ", files.token_file, ": the token is empty");
    }
  } else {
    security.token = Environment("WEFT_TOKEN");
  }
  return security;
}

StatusOr<TransportSecurity> TransportSecurityFromEnvironment() {
  TransportSecurityFiles files;
  files.certificate = Environment("WEFT_TLS_CERT");
  files.private_key = Environment("WEFT_TLS_KEY");
  files.ca = Environment("WEFT_TLS_CA");
  files.token_file = Environment("WEFT_TOKEN_FILE");
  StatusOr<TransportSecurity> security = LoadTransportSecurity(files);
  if (!security.ok()) {
    return security.status().WithContext(
        "from WEFT_TLS_CERT, WEFT_TLS_KEY, WEFT_TLS_CA and WEFT_TOKEN_FILE");
  }
  return security;
}

Status ExportTransportSecurity(const TransportSecurityFiles& files) {
  // Checked here so that a bad flag fails at once, naming the flag.
  WEFT_RETURN_IF_ERROR(LoadTransportSecurity(files).status());
  for (const auto& [name, path] :
       {std::pair{"WEFT_TLS_CERT", files.certificate}, std::pair{"WEFT_TLS_KEY", files.private_key},
        std::pair{"WEFT_TLS_CA", files.ca}, std::pair{"WEFT_TOKEN_FILE", files.token_file}}) {
    if (path.empty()) continue;
    std::error_code error;
    const std::string absolute = std::filesystem::absolute(path, error).string();
    if (setenv(name, error ? path.c_str() : absolute.c_str(), 1) != 0) {
      return Internal("cannot set ", name);
    }
  }
  return Status::OK();
}

bool TokenMatches(std::string_view expected, std::string_view presented) {
  if (expected.size() != presented.size()) return false;
  // volatile keeps the compiler from turning the loop into an early-exit comparison.
  volatile unsigned char difference = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    difference = difference | (static_cast<unsigned char>(expected[i]) ^
                               static_cast<unsigned char>(presented[i]));
  }
  return difference == 0;
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

}  // namespace weft
