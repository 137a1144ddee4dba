// The security flags of the `weft` commands; see security_flags.h.
#include "weft/cli/security_flags.h"

#include <cstdlib>

namespace weft::cli {

void AddSecurityFlags(CLI::App* command, SecurityFlags& flags, bool with_insecure) {
  command->add_option("--tls-cert", flags.files.certificate,
                      "PEM certificate of this process, signed by the --tls-ca (mutual TLS on "
                      "every gRPC port and call; default: WEFT_TLS_CERT)");
  command->add_option("--tls-key", flags.files.private_key,
                      "PEM private key of --tls-cert (default: WEFT_TLS_KEY)");
  command->add_option("--tls-ca", flags.files.ca,
                      "PEM of the CA every peer's certificate must be signed by (default: "
                      "WEFT_TLS_CA)");
  command->add_option("--token-file", flags.files.token_file,
                      "File holding a shared secret every RPC and bulk data connection must carry "
                      "(default: WEFT_TOKEN_FILE, else the token in WEFT_TOKEN)");
  if (with_insecure) {
    command->add_flag("--insecure", flags.insecure,
                      "Listen beyond loopback without TLS or a token: anyone who reaches the "
                      "ports can run graphs (default: refused; WEFT_INSECURE=1)");
  }
}

Status ApplySecurityFlags(const SecurityFlags& flags) {
  WEFT_RETURN_IF_ERROR(ExportTransportSecurity(flags.files));
  if (flags.insecure && setenv("WEFT_INSECURE", "1", 1) != 0) {
    return Internal("cannot set WEFT_INSECURE");
  }
  // What the environment held before the flags must be valid too (WEFT_TLS_* set, a flag not).
  return TransportSecurityFromEnvironment().status();
}

}  // namespace weft::cli
