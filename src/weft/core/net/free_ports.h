// Picking ports for servers that other processes will be told to listen on (`weft launch`'s tasks,
// the tests' worker processes): distinct, free when picked, and outside the kernel's ephemeral
// range, so that no process's next outgoing connection takes one as its local port before its
// server listens there. Stateless; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "weft/core/statusor.h"

namespace weft::net {

// `count` distinct ports on `host` (an IPv4 address) that were free when picked: below the kernel's
// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), tried from a random start; where that
// range is unknown or nothing below it is free, ports the kernel gives for port 0. Unavailable
// when no port can be bound; InvalidArgument naming `host` when it is not an IPv4 address.
StatusOr<std::vector<int>> PickFreePorts(int count, const std::string& host = "127.0.0.1");

}  // namespace weft::net
