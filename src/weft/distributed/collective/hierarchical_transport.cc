// HierarchicalTransport (see the header). Every operation runs up to three stages: (1) inside each
// host over shared memory, (2) among the leaders over TCP, (3) from each leader to its host. The
// stages of one host run only when it has several members, stage 2 only with several hosts. Before
// stage 2 moves data the leaders all-gather a fixed-size status block, and stage 3 starts with the
// leader broadcasting one: a failure seen on one host (a mismatch, a missing member, an abort)
// thus reaches every member promptly with its code and text, instead of as a peer's silence.
#include "weft/distributed/collective/hierarchical_transport.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "weft/core/mutex.h"
#include "weft/core/str_util.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft {
namespace {

using collective_internal::MemberName;
using collective_internal::OpLabel;

// A status as it travels between members: int32 code, uint32 length, then the text (truncated).
constexpr int64_t kStatusBytes = 1024;

Tensor EncodeStatus(const Status& status) {
  Tensor block(DataType::kUInt8, TensorShape({kStatusBytes}));
  char* bytes = static_cast<char*>(block.raw_data());
  std::memset(bytes, 0, kStatusBytes);
  const int32_t code = static_cast<int32_t>(status.code());
  const std::string_view text = status.message();
  const uint32_t length = static_cast<uint32_t>(std::min<size_t>(text.size(), kStatusBytes - 8));
  std::memcpy(bytes, &code, 4);
  std::memcpy(bytes + 4, &length, 4);
  std::memcpy(bytes + 8, text.data(), length);
  return block;
}

Status DecodeStatus(const char* bytes) {
  int32_t code = 0;
  uint32_t length = 0;
  std::memcpy(&code, bytes, 4);
  std::memcpy(&length, bytes + 4, 4);
  if (code == 0) return Status::OK();
  length = std::min<uint32_t>(length, kStatusBytes - 8);
  return Status(static_cast<Code>(code), std::string_view(bytes + 8, length));
}

// Which members share a host, computed alike on every member.
struct Layout {
  std::vector<std::vector<int>> hosts;  // by host index (order of lowest rank): ranks, ascending
  std::vector<int> host_of;             // by rank
  std::vector<int> local_rank;          // by rank: position among its host's members
  size_t max_local = 0;                 // the most members any host has
};

Layout MakeLayout(const std::vector<std::string>& member_hosts) {
  Layout layout;
  std::vector<std::string> names;
  for (const std::string& host : member_hosts) {
    const auto found = std::find(names.begin(), names.end(), host);
    const int index = static_cast<int>(found - names.begin());
    if (found == names.end()) {
      names.push_back(host);
      layout.hosts.emplace_back();
    }
    layout.host_of.push_back(index);
    layout.local_rank.push_back(static_cast<int>(layout.hosts[index].size()));
    layout.hosts[index].push_back(static_cast<int>(layout.host_of.size()) - 1);
    layout.max_local = std::max(layout.max_local, layout.hosts[index].size());
  }
  return layout;
}

class HierarchicalTransport final : public CollectiveTransport {
 public:
  HierarchicalTransport(const TransportOptions& options, std::vector<std::string> member_hosts,
                        Layout layout, std::unique_ptr<CollectiveTransport> host,
                        std::unique_ptr<CollectiveTransport> leaders)
      : options_(options),
        member_hosts_(std::move(member_hosts)),
        layout_(std::move(layout)),
        my_host_(layout_.host_of[options.rank]),
        is_leader_(layout_.local_rank[options.rank] == 0),
        host_(std::move(host)),
        leaders_(std::move(leaders)) {}

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }

  Status AllReduce(const TransportOp& op, const std::vector<Tensor>& inputs, double divisor,
                   std::vector<Tensor>* outputs) override;
  Status Broadcast(const TransportOp& op, int root, Tensor* value) override;
  Status AllGather(const TransportOp& op, const Tensor& input, Tensor* output) override;

  void StartAbort(const Status& status) override {
    {
      MutexLock lock(mu_);
      if (poisoned_.ok()) poisoned_ = status;
    }
    // Wakes a blocked stage; the protocol then carries the failure to the other members.
    if (host_ != nullptr) host_->StartAbort(status);
    if (leaders_ != nullptr) leaders_->StartAbort(status);
  }

 private:
  // With one host, or one member per host, a single sub-transport does everything.
  CollectiveTransport* Direct() const {
    if (layout_.hosts.size() == 1) return host_.get();
    return layout_.max_local == 1 ? leaders_.get() : nullptr;
  }
  std::string Name(int rank) const { return MemberName(options_, rank); }
  std::string HostName() const { return member_hosts_[options_.rank]; }
  Status InHost(const Status& status) const {
    return status.WithContext(
        StrCat("shared memory within host '", HostName(), "' (ranks within the host)"));
  }
  Status AmongLeaders(const Status& status) const {
    return status.WithContext("TCP among the hosts' leaders (ranks among the leaders)");
  }
  // A status another member reported, kept with its code.
  Status Forwarded(const Status& status, int from) const {
    return Status(status.code(), StrCat("member ", Name(from), " (leader of host '",
                                        member_hosts_[from], "') failed: ", status.message()));
  }

  // The first error once poisoned; the first time, also tells the sub-transports' peers (a
  // poisoned sub-transport publishes its failure when called).
  Status CheckPoisoned(const TransportOp& op);
  // Poisons the transport and the sub-transports with `status` (unless already); returns the first.
  Status Poison(const Status& status);
  // A failure found before stage 1 (bad arguments): the host's members learn it at once.
  void TellHost(const TransportOp& op, const Status& status);
  // Stage 2's first step: every leader's stage-1 outcome, so that all leaders go on or all stop.
  Status AgreeAmongLeaders(const TransportOp& op, const Status& mine);
  // Stage 3: the leader's outcome and, when it is OK and `data` is given, the leader's `data`.
  Status ShareInHost(const TransportOp& op, const Status& status, Tensor* data);

  const TransportOptions options_;
  const std::vector<std::string> member_hosts_;
  const Layout layout_;
  const int my_host_;
  const bool is_leader_;
  const std::unique_ptr<CollectiveTransport> host_;     // null when alone on the host
  const std::unique_ptr<CollectiveTransport> leaders_;  // null unless a leader of several hosts
  bool told_peers_ = false;                             // touched by the calling thread only

  Mutex mu_;
  Status poisoned_ WEFT_GUARDED_BY(mu_);
};

Status HierarchicalTransport::CheckPoisoned(const TransportOp& op) {
  Status status;
  {
    MutexLock lock(mu_);
    status = poisoned_;
  }
  if (status.ok() || told_peers_) return status;
  told_peers_ = true;
  Tensor nothing(DataType::kUInt8, TensorShape({0}));
  for (CollectiveTransport* sub : {host_.get(), leaders_.get()}) {
    if (sub == nullptr) continue;
    sub->StartAbort(status);
    sub->Broadcast(op, 0, &nothing).IgnoreError();  // fails at once, publishing the failure
  }
  return status;
}

Status HierarchicalTransport::Poison(const Status& status) {
  Status first;
  {
    MutexLock lock(mu_);
    if (poisoned_.ok()) poisoned_ = status;
    first = poisoned_;
  }
  if (host_ != nullptr) host_->StartAbort(first);
  if (leaders_ != nullptr) leaders_->StartAbort(first);
  return first;
}

void HierarchicalTransport::TellHost(const TransportOp& op, const Status& status) {
  if (host_ == nullptr) return;
  host_->StartAbort(status);
  Tensor nothing(DataType::kUInt8, TensorShape({0}));
  host_->Broadcast(op, 0, &nothing).IgnoreError();
}

Status HierarchicalTransport::AgreeAmongLeaders(const TransportOp& op, const Status& mine) {
  Tensor all;
  Status status = leaders_->AllGather(op, EncodeStatus(mine), &all);
  if (!mine.ok()) return mine;
  if (!status.ok()) return AmongLeaders(status);
  const char* blocks = static_cast<const char*>(all.raw_data());
  for (int h = 0; h < static_cast<int>(layout_.hosts.size()); ++h) {
    if (h == my_host_) continue;
    Status theirs = DecodeStatus(blocks + h * kStatusBytes);
    if (!theirs.ok()) return Forwarded(theirs, layout_.hosts[h][0]);
  }
  return Status::OK();
}

Status HierarchicalTransport::ShareInHost(const TransportOp& op, const Status& status,
                                          Tensor* data) {
  if (host_ == nullptr) return status;
  Tensor block = EncodeStatus(status);
  Status shared = host_->Broadcast(op, 0, &block);
  if (!status.ok()) return status;
  if (!shared.ok()) return InHost(shared);
  if (!is_leader_) {
    Status leaders = DecodeStatus(static_cast<const char*>(block.raw_data()));
    if (!leaders.ok()) return Forwarded(leaders, layout_.hosts[my_host_][0]);
  }
  if (data == nullptr) return Status::OK();
  return InHost(host_->Broadcast(op, 0, data));
}

Status HierarchicalTransport::AllReduce(const TransportOp& op, const std::vector<Tensor>& inputs,
                                        double divisor, std::vector<Tensor>* outputs) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned(op));
  if (CollectiveTransport* direct = Direct()) {
    Status status = direct->AllReduce(op, inputs, divisor, outputs);
    return status.ok() ? status : Poison(status);
  }
  // Stage 1: this host's sum (inputs are checked there, or here when alone on the host).
  std::vector<Tensor> sums;
  Status status;
  if (host_ != nullptr) {
    status = InHost(host_->AllReduce(op, inputs, 1.0, &sums));
  } else {
    status = collective_internal::PrepareAllReduce(op, inputs, divisor).status();
    sums = inputs;
  }
  const bool host_failed = !status.ok();
  // The result travels inside a host as one tensor: the only one, or the outputs concatenated.
  std::vector<Tensor> reduced;
  Tensor shared;
  if (is_leader_) {
    status = AgreeAmongLeaders(op, status);
    if (status.ok()) status = AmongLeaders(leaders_->AllReduce(op, sums, divisor, &reduced));
    if (status.ok() && host_ != nullptr) {
      if (reduced.size() == 1) {
        shared = reduced[0];
      } else {
        auto flat = collective_internal::PrepareAllReduce(op, reduced, 1.0);
        status = flat.status();
        if (status.ok()) shared = flat->input_storage;
      }
    }
  } else if (!host_failed) {
    int64_t total = 0;
    for (const Tensor& t : inputs) total += t.NumElements();
    shared =
        Tensor(inputs[0].dtype(), inputs.size() == 1 ? inputs[0].shape() : TensorShape({total}));
  }
  if (!host_failed) status = ShareInHost(op, status, &shared);
  if (!status.ok()) return Poison(status);
  if (is_leader_) {
    *outputs = std::move(reduced);
    return Status::OK();
  }
  outputs->clear();
  const char* next = static_cast<const char*>(shared.raw_data());
  for (const Tensor& t : inputs) {
    if (inputs.size() == 1) {
      outputs->push_back(shared);
      break;
    }
    Tensor out(t.dtype(), t.shape());
    if (t.TotalBytes() > 0) std::memcpy(out.raw_data(), next, t.TotalBytes());
    next += t.TotalBytes();
    outputs->push_back(std::move(out));
  }
  return Status::OK();
}

Status HierarchicalTransport::Broadcast(const TransportOp& op, int root, Tensor* value) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned(op));
  if (root < 0 || root >= options_.world_size) {
    Status status = InvalidArgument(OpLabel(op), ": broadcast root ", root,
                                    " is outside a group of ", options_.world_size);
    TellHost(op, status);
    if (is_leader_ && Direct() == nullptr) AgreeAmongLeaders(op, status).IgnoreError();
    return Poison(status);
  }
  const int root_host = layout_.host_of[root];
  if (CollectiveTransport* direct = Direct()) {
    Status status = direct->Broadcast(
        op, layout_.hosts.size() == 1 ? layout_.local_rank[root] : root_host, value);
    return status.ok() ? status : Poison(status);
  }
  // Stage 1: the root's host gets the value from the root, so that its leader has it.
  Status status;
  if (my_host_ == root_host && host_ != nullptr) {
    status = InHost(host_->Broadcast(op, layout_.local_rank[root], value));
  }
  const bool host_failed = !status.ok();
  if (is_leader_) {
    status = AgreeAmongLeaders(op, status);
    if (status.ok()) status = AmongLeaders(leaders_->Broadcast(op, root_host, value));
  }
  // The root's host hears only the outcome (it has the value); every other host gets the value.
  if (!host_failed) status = ShareInHost(op, status, my_host_ == root_host ? nullptr : value);
  return status.ok() ? status : Poison(status);
}

Status HierarchicalTransport::AllGather(const TransportOp& op, const Tensor& input,
                                        Tensor* output) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned(op));
  if (CollectiveTransport* direct = Direct()) {
    Status status = direct->AllGather(op, input, output);
    return status.ok() ? status : Poison(status);
  }
  if (input.dims() < 1) {
    Status status = InvalidArgument(OpLabel(op), ": all-gather input ", input.shape().DebugString(),
                                    " has no dimension to concatenate along");
    TellHost(op, status);
    if (is_leader_) AgreeAmongLeaders(op, status).IgnoreError();
    return Poison(status);
  }
  // Stage 1: this host's inputs, in the order of its members' ranks.
  Tensor block = input;
  Status status;
  if (host_ != nullptr) status = InHost(host_->AllGather(op, input, &block));
  const bool host_failed = !status.ok();
  const int64_t rows = input.dim_size(0);
  const size_t bytes = input.TotalBytes();
  TensorShape shape = input.shape();
  shape.set_dim(0, rows * options_.world_size);
  Tensor result;
  if (is_leader_) {
    status = AgreeAmongLeaders(op, status);
    // Hosts may hold different numbers of members; the leaders' all-gather needs equal blocks,
    // so each is padded to the largest host's.
    const size_t local = layout_.hosts[my_host_].size();
    Tensor padded = block;
    if (status.ok() && local < layout_.max_local) {
      TensorShape padded_shape = input.shape();
      padded_shape.set_dim(0, rows * static_cast<int64_t>(layout_.max_local));
      padded = Tensor(input.dtype(), padded_shape);
      char* to = static_cast<char*>(padded.raw_data());
      if (local * bytes > 0) std::memcpy(to, block.raw_data(), local * bytes);
      std::memset(to + local * bytes, 0, (layout_.max_local - local) * bytes);
    }
    Tensor all;
    if (status.ok()) status = AmongLeaders(leaders_->AllGather(op, padded, &all));
    if (status.ok()) {
      result = Tensor(input.dtype(), shape);
      const char* from = static_cast<const char*>(all.raw_data());
      char* to = static_cast<char*>(result.raw_data());
      for (int g = 0; g < options_.world_size && bytes > 0; ++g) {
        const size_t slot = layout_.host_of[g] * layout_.max_local + layout_.local_rank[g];
        std::memcpy(to + g * bytes, from + slot * bytes, bytes);
      }
    }
  } else if (!host_failed) {
    result = Tensor(input.dtype(), shape);
  }
  if (!host_failed) status = ShareInHost(op, status, &result);
  if (!status.ok()) return Poison(status);
  *output = std::move(result);
  return Status::OK();
}

// The name a member goes by in a sub-transport, whose ranks are not the group's.
std::string SubName(const TransportOptions& options, int rank, int sub_rank) {
  const std::string name = rank < static_cast<int>(options.member_names.size())
                               ? options.member_names[rank]
                               : std::string();
  if (sub_rank == rank) return name;
  return name.empty() ? StrCat("group rank ", rank) : StrCat(name, " (group rank ", rank, ")");
}

}  // namespace

StatusOr<std::unique_ptr<CollectiveTransport>> CreateHierarchicalTransport(
    const TransportOptions& options, const std::vector<std::string>& member_hosts,
    std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses) {
  return CreateHierarchicalTransport(options, member_hosts, std::move(listener), member_addresses,
                                     HierarchicalTransportTuning());
}

StatusOr<std::unique_ptr<CollectiveTransport>> CreateHierarchicalTransport(
    const TransportOptions& options, const std::vector<std::string>& member_hosts,
    std::unique_ptr<TcpTransportListener> listener,
    const std::vector<std::string>& member_addresses, const HierarchicalTransportTuning& tuning) {
  WEFT_RETURN_IF_ERROR(collective_internal::CheckOptions(options, "hierarchical"));
  if (static_cast<int>(member_hosts.size()) != options.world_size) {
    return InvalidArgument("hierarchical transport of group '", options.group_token,
                           "': ", member_hosts.size(), " member hosts for a group of ",
                           options.world_size);
  }
  Layout layout = MakeLayout(member_hosts);
  const int my_host = layout.host_of[options.rank];
  const bool is_leader = layout.local_rank[options.rank] == 0;
  const int num_hosts = static_cast<int>(layout.hosts.size());
  const std::vector<int>& mates = layout.hosts[my_host];
  std::unique_ptr<CollectiveTransport> host;
  if (mates.size() > 1) {
    TransportOptions host_options;
    host_options.rank = layout.local_rank[options.rank];
    host_options.world_size = static_cast<int>(mates.size());
    for (int r = 0; r < host_options.world_size; ++r) {
      host_options.member_names.push_back(SubName(options, mates[r], r));
    }
    host_options.group_token = StrCat(options.group_token, "-h", my_host);
    host_options.timeout = options.timeout;
    auto made = CreateShmTransport(host_options, tuning.shm);
    if (!made.ok()) {
      return made.status().WithContext(StrCat("hierarchical transport of group '",
                                              options.group_token, "': shared memory on host '",
                                              member_hosts[options.rank], "'"));
    }
    host = std::move(made).value();
  }
  std::unique_ptr<CollectiveTransport> leaders;
  if (is_leader && num_hosts > 1) {
    if (static_cast<int>(member_addresses.size()) != options.world_size) {
      return InvalidArgument("hierarchical transport of group '", options.group_token,
                             "': ", member_addresses.size(), " member addresses for a group of ",
                             options.world_size);
    }
    TransportOptions leader_options;
    leader_options.rank = my_host;
    leader_options.world_size = num_hosts;
    std::vector<std::string> addresses;
    for (int h = 0; h < num_hosts; ++h) {
      leader_options.member_names.push_back(SubName(options, layout.hosts[h][0], h));
      addresses.push_back(member_addresses[layout.hosts[h][0]]);
    }
    leader_options.group_token = StrCat(options.group_token, "-leaders");
    leader_options.timeout = options.timeout;
    auto made = CreateTcpTransport(leader_options, std::move(listener), addresses, tuning.tcp);
    if (!made.ok()) {
      return made.status().WithContext(StrCat("hierarchical transport of group '",
                                              options.group_token, "': TCP among the leaders"));
    }
    leaders = std::move(made).value();
  }
  listener.reset();  // a non-leader's is never dialled
  return std::unique_ptr<CollectiveTransport>(new HierarchicalTransport(
      options, member_hosts, std::move(layout), std::move(host), std::move(leaders)));
}

}  // namespace weft
