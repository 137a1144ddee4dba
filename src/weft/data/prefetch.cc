// Prefetch: one background thread per iterator runs the input and fills a bounded queue; the
// consumer takes from its front. Errors travel through the queue like elements, so the consumer
// sees exactly the input's sequence. Destroying the iterator stops the thread and joins it.
#include <deque>
#include <thread>
#include <utility>

#include "weft/core/mutex.h"
#include "weft/data/dataset_node.h"

namespace weft::data {
namespace {

using IteratorPtr = std::unique_ptr<Iterator>;

class PrefetchIterator final : public Iterator {
 public:
  PrefetchIterator(IteratorPtr input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(static_cast<size_t>(buffer_size)) {
    thread_ = std::thread([this] { Produce(); });
  }

  ~PrefetchIterator() override {
    {
      MutexLock lock(mu_);
      cancelled_ = true;
      cv_.NotifyAll();
    }
    // The producer may be inside input_->GetNext; it checks cancelled_ as soon as that returns.
    thread_.join();
  }

  Status GetNext(Element* element, bool* end_of_sequence) override {
    MutexLock lock(mu_);
    while (queue_.empty()) cv_.Wait(lock);
    Entry& front = queue_.front();
    if (front.end) {  // stays queued, so later calls see the end too
      *end_of_sequence = true;
      return Status::OK();
    }
    *end_of_sequence = false;
    Status status = std::move(front.status);
    if (status.ok()) *element = std::move(front.element);
    queue_.pop_front();
    cv_.NotifyAll();
    return status;
  }

 private:
  struct Entry {
    Status status;
    Element element;
    bool end = false;
  };

  void Produce() {
    while (true) {
      {
        MutexLock lock(mu_);
        while (!cancelled_ && queue_.size() >= buffer_size_) cv_.Wait(lock);
        if (cancelled_) return;
      }
      // Only this thread touches input_, and the lock is not held while the input works.
      Entry entry;
      entry.status = input_->GetNext(&entry.element, &entry.end);
      if (!entry.status.ok()) entry.end = false;
      const bool end = entry.end;
      {
        MutexLock lock(mu_);
        queue_.push_back(std::move(entry));
        cv_.NotifyAll();
      }
      if (end) return;
    }
  }

  IteratorPtr input_;
  const size_t buffer_size_;
  Mutex mu_;
  CondVar cv_;  // signals queue changes and cancellation, in both directions
  std::deque<Entry> queue_ WEFT_GUARDED_BY(mu_);
  bool cancelled_ WEFT_GUARDED_BY(mu_) = false;
  std::thread thread_;  // started last, after every member it uses exists
};

}  // namespace

NodePtr MakePrefetchNode(NodePtr input, int64_t buffer_size) {
  auto describe = [=](proto::DatasetDef* def) -> StatusOr<proto::DatasetDef*> {
    proto::PrefetchDatasetDef* prefetch = def->mutable_prefetch();
    prefetch->set_buffer_size(buffer_size);
    return prefetch->mutable_input();
  };
  return MakeTransformationNode<PrefetchIterator>(std::move(input), describe, buffer_size);
}

}  // namespace weft::data
