// The flags that secure a process's ports and calls — --tls-cert, --tls-key, --tls-ca,
// --token-file and (for servers) --insecure — shared by `weft server`, `weft train` and
// `weft launch`. Applying them exports them to the environment, where every server and session of
// the process and every process it starts finds them (distributed/rpc/transport_security.h).
#pragma once

#include <CLI/CLI.hpp>

#include "weft/core/status.h"
#include "weft/distributed/rpc/transport_security.h"

namespace weft::cli {

struct SecurityFlags {
  TransportSecurityFiles files;
  bool insecure = false;
};

// `with_insecure`: the command may start servers that listen beyond loopback.
void AddSecurityFlags(CLI::App* command, SecurityFlags& flags, bool with_insecure);

// Checks the files (errors name the flag and the file) and exports them, and WEFT_INSECURE=1 for
// --insecure.
Status ApplySecurityFlags(const SecurityFlags& flags);

}  // namespace weft::cli
