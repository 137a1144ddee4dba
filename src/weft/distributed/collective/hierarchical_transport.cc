// HierarchicalTransport (see the header): per operation (1) a stage inside each host over shared
// memory, (2) one among the leaders over TCP, (3) one from each leader to its host. Stage 2 opens
// with the leaders all-gathering status blocks and stage 3 with the leader broadcasting one, so a
// failure seen on one host reaches every member promptly, with its code and text. Each stage waits
// a little longer than the one before, so that the verdict naming a member that never arrived wins
// over a later stage's own timeout on a peer that was itself waiting.
#include "weft/distributed/collective/hierarchical_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "weft/core/str_util.h"
#include "weft/distributed/collective/internal/transport_util.h"

namespace weft {
namespace {

using internal::MemberName;
using internal::OpIdentity;
using internal::OpLabel;

// A status as it travels between members: int32 code, uint32 text length, the sender's operation
// (when the receiver has not checked it otherwise; zero when absent), then the text (truncated).
constexpr int64_t kStatusBytes = 1024;
constexpr size_t kTextAt = 8 + sizeof(OpIdentity);
// Payloads up to this size travel in one message with the status (a copy is cheaper than a round).
constexpr size_t kMergeBytes = size_t{64} << 10;
// The most each stage waits beyond the one before it (half the timeout when that is less): enough
// for a verdict to cross a host or the network, little against any timeout.
constexpr std::chrono::milliseconds kMaxStageGrace{2000};

// The status block followed by `payload_bytes` (copied from `payload` when given).
Tensor EncodeStatus(const Status& status, const OpIdentity* identity = nullptr,
                    size_t payload_bytes = 0, const void* payload = nullptr) {
  Tensor block(DataType::kUInt8, TensorShape({kStatusBytes + static_cast<int64_t>(payload_bytes)}));
  char* bytes = static_cast<char*>(block.raw_data());
  std::memset(bytes, 0, kStatusBytes);
  if (payload != nullptr && payload_bytes > 0) {
    std::memcpy(bytes + kStatusBytes, payload, payload_bytes);
  }
  const int32_t code = static_cast<int32_t>(status.code());
  const std::string_view text = status.message();
  const uint32_t length = static_cast<uint32_t>(std::min(text.size(), kStatusBytes - kTextAt));
  std::memcpy(bytes, &code, 4);
  std::memcpy(bytes + 4, &length, 4);
  if (identity != nullptr) std::memcpy(bytes + 8, identity, sizeof(OpIdentity));
  std::memcpy(bytes + kTextAt, text.data(), length);
  return block;
}

Status DecodeStatus(const char* bytes) {
  int32_t code = 0;
  uint32_t length = 0;
  std::memcpy(&code, bytes, 4);
  std::memcpy(&length, bytes + 4, 4);
  if (code == 0) return Status::OK();
  length = std::min<uint32_t>(length, kStatusBytes - kTextAt);
  return Status(static_cast<Code>(code), std::string_view(bytes + kTextAt, length));
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
        stage_grace_(std::min(options.timeout / 2, kMaxStageGrace)),
        host_(std::move(host)),
        leaders_(std::move(leaders)) {}

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }

  Status AllReduce(const TransportOp& op, const std::vector<Tensor>& inputs, double divisor,
                   std::vector<Tensor>* outputs) override;
  Status Broadcast(const TransportOp& op, int root, Tensor* value) override;
  Status AllGather(const TransportOp& op, const Tensor& input, Tensor* output) override;

  // Wakes a blocked stage (the sub-transports are aborted); the protocol then carries the failure
  // to the other members.
  void StartAbort(const Status& status) override { Poison(status).IgnoreError(); }

 private:
  // With one host, or one member per host, a single sub-transport does everything.
  CollectiveTransport* Direct() const {
    if (layout_.hosts.size() == 1) return host_.get();
    return layout_.max_local == 1 ? leaders_.get() : nullptr;
  }
  std::string Name(int rank) const { return MemberName(options_, rank); }
  // `op` as stage 2 (among the leaders) or 3 (leader to host) calls it: each stage waits longer
  // than the one before, so that a member waiting in a later stage hears the verdict of an earlier
  // one, which names the member that never arrived, instead of timing out on its own peer (a
  // leader) at the same moment and naming that peer.
  TransportOp Stage(const TransportOp& op, int stage) const {
    TransportOp staged = op;
    staged.extra_wait = op.extra_wait + (stage - 1) * stage_grace_;
    return staged;
  }
  std::string HostName() const { return member_hosts_[options_.rank]; }
  Status InHost(const Status& status) const {
    return status.WithContext(
        StrCat("shared memory within host '", HostName(), "' (ranks within the host)"));
  }
  Status AmongLeaders(const Status& status) const {
    return status.WithContext("TCP among the hosts' leaders (ranks among the leaders)");
  }
  // InvalidArgument when the block from member `from` carries an operation other than `mine`.
  Status CheckBlockOp(const TransportOp& op, const char* block, const OpIdentity& mine,
                      int from) const {
    OpIdentity theirs;
    std::memcpy(&theirs, block + 8, sizeof(theirs));
    return internal::CheckSameOp(options_, OpLabel(op), options_.rank, mine, from, theirs);
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
  Status Done(const Status& status) { return status.ok() ? status : Poison(status); }
  // Poisons `sub` and has it publish the failure to its peers (a poisoned transport does so when
  // called): used for failures that this protocol does not carry.
  static void Tell(CollectiveTransport* sub, const TransportOp& op, const Status& status) {
    if (sub == nullptr) return;
    sub->StartAbort(status);
    Tensor nothing(DataType::kUInt8, TensorShape({0}));
    sub->Broadcast(op, 0, &nothing).IgnoreError();
  }
  // Fails an operation this member rejects before its first stage: the peers of each stage that
  // would wait for this member are told at once (instead of at their deadline), then it poisons.
  Status Reject(const TransportOp& op, const Status& status) {
    Tell(host_.get(), op, status);
    if (is_leader_ && Direct() == nullptr) AgreeAmongLeaders(op, status).IgnoreError();
    return Poison(status);
  }
  // Stage 2's first step: every leader's stage-1 outcome, so that all leaders go on or all stop.
  Status AgreeAmongLeaders(const TransportOp& op, const Status& mine);
  // Stage 2 of a small all-reduce in one exchange: the leaders all-gather their statuses with
  // their host's sums and each adds the sums in host order into `result` (`bytes` long).
  Status SmallAmongLeaders(const TransportOp& op, const Status& mine,
                           const std::vector<Tensor>& sums, double divisor, size_t bytes,
                           Tensor* result);
  // Stage 3: the leader's outcome and, when it is OK, the leader's `data` (`bytes` long, as every
  // member of the host computes from its own arguments; 0 when there is no data).
  // Unless `may_merge` (when stage 1 checked that the host's members agree), the data goes in a
  // broadcast of its own, whose check compares every member's call.
  Status ShareInHost(const TransportOp& op, const Status& status, Tensor* data, size_t bytes,
                     bool may_merge = true);

  const TransportOptions options_;
  const std::vector<std::string> member_hosts_;
  const Layout layout_;
  const int my_host_;
  const bool is_leader_;
  const std::chrono::milliseconds stage_grace_;  // how much longer each stage waits than the last
  const std::unique_ptr<CollectiveTransport> host_;     // null when alone on the host
  const std::unique_ptr<CollectiveTransport> leaders_;  // null unless a leader of several hosts
  bool told_peers_ = false;                             // touched by the calling thread only
  internal::TransportPoison poison_;
};

Status HierarchicalTransport::CheckPoisoned(const TransportOp& op) {
  Status status = poison_.status();
  if (status.ok() || told_peers_) return status;
  told_peers_ = true;
  Tell(host_.get(), op, status);
  Tell(leaders_.get(), op, status);
  return status;
}

Status HierarchicalTransport::Poison(const Status& status) {
  Status first = poison_.Poison(status);
  if (host_ != nullptr) host_->StartAbort(first);
  if (leaders_ != nullptr) leaders_->StartAbort(first);
  return first;
}

Status HierarchicalTransport::AgreeAmongLeaders(const TransportOp& op, const Status& mine) {
  Tensor all;
  Status status = leaders_->AllGather(Stage(op, 2), EncodeStatus(mine), &all);
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

Status HierarchicalTransport::SmallAmongLeaders(const TransportOp& op, const Status& mine,
                                                const std::vector<Tensor>& sums, double divisor,
                                                size_t bytes, Tensor* result) {
  // The host's sums, flat (a failed leader sends as many bytes, unset: only its status counts),
  // with the operation: leaders' byte counts may agree where their dtypes or shapes differ.
  OpIdentity identity;
  if (mine.ok()) {
    auto flat = internal::PrepareAllReduce(op, sums, divisor);
    if (flat.ok()) identity = flat->identity;
  }
  Tensor block = EncodeStatus(mine, &identity, bytes);
  char* next = static_cast<char*>(block.raw_data()) + kStatusBytes;
  for (size_t i = 0; mine.ok() && i < sums.size(); ++i) {
    if (sums[i].TotalBytes() > 0) std::memcpy(next, sums[i].raw_data(), sums[i].TotalBytes());
    next += sums[i].TotalBytes();
  }
  Tensor all;
  Status status = leaders_->AllGather(Stage(op, 2), block, &all);
  if (!mine.ok()) return mine;
  if (!status.ok()) return AmongLeaders(status);
  const char* blocks = static_cast<const char*>(all.raw_data());
  const size_t stride = kStatusBytes + bytes;
  std::vector<const char*> host_sums;
  for (int h = 0; h < static_cast<int>(layout_.hosts.size()); ++h) {
    Status theirs = DecodeStatus(blocks + h * stride);
    if (!theirs.ok()) return Forwarded(theirs, layout_.hosts[h][0]);
    WEFT_RETURN_IF_ERROR(CheckBlockOp(op, blocks + h * stride, identity, layout_.hosts[h][0]));
    host_sums.push_back(blocks + h * stride + kStatusBytes);
  }
  // Every leader adds the same sums in the same order: the same bits everywhere.
  internal::SumInOrder(result->dtype(), host_sums, static_cast<char*>(result->raw_data()),
                       result->NumElements(), divisor);
  return Status::OK();
}

Status HierarchicalTransport::ShareInHost(const TransportOp& op, const Status& status, Tensor* data,
                                          size_t bytes, bool may_merge) {
  if (host_ == nullptr) return status;
  // Small data rides with the status; larger data follows in its own broadcast.
  const bool merged = bytes <= kMergeBytes && may_merge;
  const bool send = is_leader_ && status.ok() && merged && bytes > 0;
  Tensor block =
      EncodeStatus(status, nullptr, merged ? bytes : 0, send ? data->raw_data() : nullptr);
  Status shared = host_->Broadcast(Stage(op, 3), 0, &block);
  if (!status.ok()) return status;
  if (!shared.ok()) return InHost(shared);
  if (!is_leader_) {
    const char* got = static_cast<const char*>(block.raw_data());
    Status leaders = DecodeStatus(got);
    if (!leaders.ok()) return Forwarded(leaders, layout_.hosts[my_host_][0]);
    if (merged && bytes > 0) std::memcpy(data->raw_data(), got + kStatusBytes, bytes);
  }
  if (merged) return Status::OK();
  return InHost(host_->Broadcast(Stage(op, 3), 0, data));
}

Status HierarchicalTransport::AllReduce(const TransportOp& op, const std::vector<Tensor>& inputs,
                                        double divisor, std::vector<Tensor>* outputs) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned(op));
  if (CollectiveTransport* direct = Direct()) {
    return Done(direct->AllReduce(op, inputs, divisor, outputs));
  }
  // Stage 1: this host's sum (inputs are checked there, or here when alone on the host).
  std::vector<Tensor> sums;
  Status status;
  if (host_ != nullptr) {
    status = InHost(host_->AllReduce(op, inputs, 1.0, &sums));
  } else {
    status = internal::PrepareAllReduce(op, inputs, divisor).status();
    sums = inputs;
  }
  const bool host_failed = !status.ok();
  const DataType dtype = inputs.empty() ? DataType::kFloat : inputs[0].dtype();
  int64_t total = 0;
  for (const Tensor& t : inputs) total += t.NumElements();
  const size_t bytes = static_cast<size_t>(total) * DataTypeSize(dtype);
  // The result travels inside a host as one tensor: the only one, or the outputs concatenated.
  const TensorShape flat_shape = inputs.size() == 1 ? inputs[0].shape() : TensorShape({total});
  Tensor flat;
  std::vector<Tensor> reduced;  // a large all-reduce's outputs on a leader
  if (is_leader_ && bytes <= kMergeBytes) {
    if (!host_failed) flat = Tensor(dtype, flat_shape);
    status = SmallAmongLeaders(op, status, sums, divisor, bytes, &flat);
  } else if (is_leader_) {
    status = AgreeAmongLeaders(op, status);
    if (status.ok())
      status = AmongLeaders(leaders_->AllReduce(Stage(op, 2), sums, divisor, &reduced));
    if (status.ok() && host_ != nullptr) {
      if (reduced.size() == 1) {
        flat = reduced[0];
      } else {
        auto concatenated = internal::PrepareAllReduce(op, reduced, 1.0);
        status = concatenated.status();
        if (status.ok()) flat = concatenated->input_storage;
      }
    }
  } else if (!host_failed) {
    flat = Tensor(dtype, flat_shape);
  }
  if (!host_failed) status = ShareInHost(op, status, &flat, bytes);
  if (!status.ok()) return Poison(status);
  if (!reduced.empty()) {
    *outputs = std::move(reduced);
    return Status::OK();
  }
  internal::FlatAllReduce result;
  result.output_storage = flat;
  result.output = static_cast<char*>(flat.raw_data());
  internal::FinishAllReduce(inputs, result, outputs);
  return Status::OK();
}

Status HierarchicalTransport::Broadcast(const TransportOp& op, int root, Tensor* value) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned(op));
  Status bad_root = internal::CheckBroadcastRoot(op, root, options_.world_size);
  if (!bad_root.ok()) return Reject(op, bad_root);
  const int root_host = layout_.host_of[root];
  if (CollectiveTransport* direct = Direct()) {
    return Done(direct->Broadcast(
        op, layout_.hosts.size() == 1 ? layout_.local_rank[root] : root_host, value));
  }
  // Stage 1: the root's host gets the value from the root, so that its leader has it.
  Status status;
  if (my_host_ == root_host && host_ != nullptr) {
    status = InHost(host_->Broadcast(op, layout_.local_rank[root], value));
  }
  const bool host_failed = !status.ok();
  if (is_leader_) {
    status = AgreeAmongLeaders(op, status);
    if (status.ok()) status = AmongLeaders(leaders_->Broadcast(Stage(op, 2), root_host, value));
  }
  // The root's host hears only the outcome (it has the value); every other host gets the value.
  if (!host_failed) {
    const bool wants = my_host_ != root_host;
    status = ShareInHost(op, status, wants ? value : nullptr, wants ? value->TotalBytes() : 0,
                         /*may_merge=*/!wants);
  }
  return Done(status);
}

Status HierarchicalTransport::AllGather(const TransportOp& op, const Tensor& input,
                                        Tensor* output) {
  WEFT_RETURN_IF_ERROR(CheckPoisoned(op));
  if (CollectiveTransport* direct = Direct()) return Done(direct->AllGather(op, input, output));
  Status bad_input = internal::CheckAllGatherInput(op, input);
  if (!bad_input.ok()) return Reject(op, bad_input);
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
    if (status.ok()) status = AmongLeaders(leaders_->AllGather(Stage(op, 2), padded, &all));
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
  if (!host_failed) status = ShareInHost(op, status, &result, bytes * options_.world_size);
  if (!status.ok()) return Poison(status);
  *output = std::move(result);
  return Status::OK();
}

// The options of a sub-transport among the members `ranks` (group ranks, ascending), in which
// this member is `sub_rank`. Names keep the group rank, since the sub-transport ranks differ.
TransportOptions SubOptions(const TransportOptions& options, const std::vector<int>& ranks,
                            int sub_rank, std::string_view suffix) {
  TransportOptions sub;
  sub.rank = sub_rank;
  sub.world_size = static_cast<int>(ranks.size());
  for (int r = 0; r < sub.world_size; ++r) {
    const int g = ranks[r];
    const std::string name = options.member_names.empty() ? "" : options.member_names[g];
    sub.member_names.push_back(r == g         ? name
                               : name.empty() ? StrCat("group rank ", g)
                                              : internal::SubGroupMemberName(name, g));
  }
  sub.group_token = StrCat(options.group_token, suffix);
  sub.timeout = options.timeout;
  return sub;
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
  WEFT_RETURN_IF_ERROR(internal::CheckOptions(options, "hierarchical"));
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
  const std::string context = StrCat("hierarchical transport of group '", options.group_token, "'");
  std::unique_ptr<CollectiveTransport> host;
  if (mates.size() > 1) {
    auto made = CreateShmTransport(
        SubOptions(options, mates, layout.local_rank[options.rank], StrCat("-h", my_host)),
        tuning.shm);
    if (!made.ok()) {
      return made.status().WithContext(
          StrCat(context, ": shared memory on host '", member_hosts[options.rank], "'"));
    }
    host = std::move(made).value();
  }
  std::unique_ptr<CollectiveTransport> leaders;
  if (is_leader && num_hosts > 1) {
    if (static_cast<int>(member_addresses.size()) != options.world_size) {
      return InvalidArgument(context, ": ", member_addresses.size(),
                             " member addresses for a group of ", options.world_size);
    }
    std::vector<int> leader_ranks;
    std::vector<std::string> addresses;
    for (const std::vector<int>& members : layout.hosts) {
      leader_ranks.push_back(members[0]);
      addresses.push_back(member_addresses[members[0]]);
    }
    auto made = CreateTcpTransport(SubOptions(options, leader_ranks, my_host, "-leaders"),
                                   std::move(listener), addresses, tuning.tcp);
    if (!made.ok()) return made.status().WithContext(StrCat(context, ": TCP among the leaders"));
    leaders = std::move(made).value();
  }
  listener.reset();  // a non-leader's is never dialled
  return std::unique_ptr<CollectiveTransport>(new HierarchicalTransport(
      options, member_hosts, std::move(layout), std::move(host), std::move(leaders)));
}

}  // namespace weft
