// ExpandSlurmNodeList: Slurm's compressed host list ("node[01-03,07],gpu7") expanded to one name
// per node ({"node01", "node02", "node03", "node07", "gpu7"}), as `scontrol show hostnames` does.
// Malformed text is an InvalidArgument quoting the bad part. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "weft/core/statusor.h"

namespace weft {

// Entries are separated by commas outside brackets; each entry is text with any number of bracket
// groups ("rack[1-2]-n[1-3]" gives the product, rack1-n1 first). A group holds numbers and ranges
// "lo-hi" (hi >= lo); a range keeps the width of its lower bound ("01-10": 01 ... 10). At most
// 65536 names.
StatusOr<std::vector<std::string>> ExpandSlurmNodeList(std::string_view node_list);

}  // namespace weft
