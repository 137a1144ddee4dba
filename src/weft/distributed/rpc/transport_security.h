// TransportSecurity: what protects a task's ports and its calls to other tasks — mutual TLS (each
// side shows a certificate the shared CA signed) and a shared token checked on every RPC and every
// bulk data connection. Loaded from flags' files or from the environment (WEFT_TLS_CERT,
// WEFT_TLS_KEY, WEFT_TLS_CA, WEFT_TOKEN_FILE, WEFT_TOKEN), so that processes a launcher starts
// inherit it. Values and free functions; thread-safe. See docs/security.md; the gRPC credentials
// made from it are in grpc_credentials.h.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "weft/core/statusor.h"

namespace weft {

// The gRPC metadata key that carries the token.
inline constexpr char kTokenMetadataKey[] = "weft-token";

struct TransportSecurity {
  std::string certificate_chain;  // PEM; TLS is on when set
  std::string private_key;        // PEM, for certificate_chain
  std::string root_certificates;  // PEM of the CA that must have signed every peer
  std::string token;              // shared secret; empty: none

  bool tls() const { return !certificate_chain.empty(); }
  // Whether anything authenticates a peer.
  bool authenticates() const { return tls() || !token.empty(); }
};

// Paths as a user gives them; empty: not given.
struct TransportSecurityFiles {
  std::string certificate;  // --tls-cert
  std::string private_key;  // --tls-key
  std::string ca;           // --tls-ca
  std::string token_file;   // --token-file
};

// Reads the files. TLS needs all three of certificate, key and CA; the token comes from
// token_file, else from WEFT_TOKEN. Errors name the flag and the file.
StatusOr<TransportSecurity> LoadTransportSecurity(const TransportSecurityFiles& files);
// LoadTransportSecurity of the paths in WEFT_TLS_CERT, WEFT_TLS_KEY, WEFT_TLS_CA and
// WEFT_TOKEN_FILE (WEFT_TOKEN when that is unset).
StatusOr<TransportSecurity> TransportSecurityFromEnvironment();
// Puts `files` (made absolute) into the environment for TransportSecurityFromEnvironment, for this
// process's later servers and sessions and for the processes it starts. Unset ones stay as they
// are.
Status ExportTransportSecurity(const TransportSecurityFiles& files);

// Compares in time that depends only on the lengths, so that a wrong guess tells nothing about
// how much of it was right.
bool TokenMatches(std::string_view expected, std::string_view presented);

// True for "127.x.x.x", "::1" and "localhost".
bool IsLoopbackHost(std::string_view host);

}  // namespace weft
