// nn::DistributedDataParallel: gradients averaged over the ranks in buckets, each bucket's
// reduction queued on the communication thread as soon as the evaluation has computed its
// gradients (exec/result_watch.hpp), so that it runs while the backward pass goes on.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "api/builder.hpp"
#include "distributed/world.hpp"
#include "exec/result_watch.hpp"
#include "graph/buffer.hpp"
#include "graph/node.hpp"
#include "graph/values.hpp"
#include "kiln/autodiff.hpp"
#include "kiln/distributed.hpp"
#include "kiln/error.hpp"

namespace kiln::nn {

namespace dist = kiln::distributed;
using kiln::detail::Buffer;
using kiln::detail::Node;

namespace {

// Parameters of one dtype whose gradients travel together, in one flat buffer.
struct Bucket {
  std::vector<std::size_t> members;  // indices into the trained parameters
  std::int64_t count = 0;
  DType dtype = DType::f32;
  std::size_t waiting = 0;  // members whose gradient is not computed yet
  std::shared_ptr<Buffer> input;
  std::shared_ptr<Buffer> output;
  std::shared_future<void> done;
  bool queued = false;
};

}  // namespace

struct DistributedDataParallel::State {
  std::vector<Parameter> trained;
  std::vector<Tensor> grads;       // lazily built, then evaluated (targets of the evaluation)
  std::vector<std::int64_t> offset;  // each trained parameter's place in its bucket
  std::vector<std::size_t> bucket_of;
  std::vector<Bucket> buckets;
  std::size_t next_to_queue = 0;
  double wait_seconds = 0;

  // Buckets in reverse order of the parameters, by dtype, up to `cap` bytes each (the first up
  // to `first_cap`).
  void plan(double first_cap_mb, double cap_mb) {
    const double mb = 1024.0 * 1024.0;
    buckets.clear();
    offset.assign(trained.size(), 0);
    bucket_of.assign(trained.size(), 0);
    std::vector<std::size_t> open(16, SIZE_MAX);  // per dtype, the bucket being filled
    for (std::size_t k = trained.size(); k-- > 0;) {
      const Tensor& v = trained[k].value();
      const auto d = static_cast<std::size_t>(v.dtype());
      std::size_t& b = open[d];
      const double bytes = static_cast<double>(v.numel()) * static_cast<double>(size_of(v.dtype()));
      const double cap = (b == 0 ? first_cap_mb : cap_mb) * mb;
      if (b == SIZE_MAX ||
          (!buckets[b].members.empty() &&
           static_cast<double>(buckets[b].count) * static_cast<double>(size_of(v.dtype())) + bytes > cap)) {
        buckets.push_back({});
        buckets.back().dtype = v.dtype();
        b = buckets.size() - 1;
      }
      offset[k] = buckets[b].count;
      bucket_of[k] = b;
      buckets[b].members.push_back(k);
      buckets[b].count += v.numel();
    }
  }

  // Queues the buckets whose gradients are all in, in bucket order on every rank (the order of
  // collectives must be the same everywhere).
  void queue_ready() {
    while (next_to_queue < buckets.size() && buckets[next_to_queue].waiting == 0) {
      Bucket& b = buckets[next_to_queue++];
      auto t = std::make_shared<dist::detail::Transfer>();
      t->kind = dist::detail::Collective::all_reduce;
      t->op_name = "DistributedDataParallel::backward";
      t->user_dtype = b.dtype;
      t->user_shape = {b.count};
      t->wire_dtype = b.dtype;
      t->reduce = dist::ReduceOp::mean;
      t->count = b.count;
      const void* bytes = std::as_const(*b.input).data();
      t->input = std::shared_ptr<const void>(b.input, bytes);
      t->output = std::shared_ptr<void>(b.output, b.output->data());
      b.done = dist::detail::world_submit(std::move(t));
      b.queued = true;
    }
  }

  // Gradient k holds its values: copy them into its bucket, or, for a bucket of one gradient
  // (a large weight), send the gradient's own storage.
  void gradient_ready(std::size_t k) {
    Bucket& b = buckets[bucket_of[k]];
    const Node& node = *grads[k].node();
    if (b.members.size() == 1) {
      b.input = kiln::detail::host_buffer(node);
    } else {
      const Buffer& values = kiln::detail::host_values(node);
      std::memcpy(static_cast<char*>(b.input->data()) +
                      static_cast<std::size_t>(offset[k]) * size_of(b.dtype),
                  values.data(), values.bytes());
    }
    --b.waiting;
    queue_ready();
  }
};

namespace {

// The shapes of a layout (count, then dtype, rank and sizes per slot), for messages.
std::string describe_layout(const std::int64_t* layout) {
  std::string s;
  std::size_t at = 1;
  for (std::int64_t i = 0; i < layout[0]; ++i) {
    const auto dtype = static_cast<DType>(layout[at]);
    const auto rank = static_cast<std::size_t>(layout[at + 1]);
    const Shape shape(layout + at + 2, layout + at + 2 + rank);
    if (!s.empty()) s += ' ';
    s += dtype_name(dtype);
    s += shape_to_string(shape);
    at += 2 + rank;
  }
  return s.empty() ? "none" : s;
}

// Checks that every rank has the same slots (shapes and dtypes, in order), every rank reaching
// the same verdict, then gives every rank rank 0's values.
void broadcast_from_rank0(const std::vector<std::pair<std::string, Parameter>>& slots,
                          const char* what) {
  std::vector<std::int64_t> layout{static_cast<std::int64_t>(slots.size())};
  for (const auto& [name, p] : slots) {
    layout.push_back(static_cast<std::int64_t>(p.value().dtype()));
    layout.push_back(p.value().rank());
    for (std::int64_t d : p.value().shape()) layout.push_back(d);
  }
  // Layouts of different lengths already fail here, on every rank, naming the ranks.
  const std::vector<std::int64_t> all =
      dist::all_gather(Tensor::from(layout)).to_vector<std::int64_t>();
  const std::size_t n = layout.size();
  for (int r = 1; r < dist::world_size(); ++r)
    if (!std::equal(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n),
                    all.begin() + static_cast<std::ptrdiff_t>(r * n)))
      throw Error(ErrorCode::incompatible_shapes,
                  std::string("nn::DistributedDataParallel: every rank must build the same "
                              "module; rank ") + std::to_string(r) + " has " + what + " " +
                      describe_layout(all.data() + r * n) + ", rank 0 has " + what + " " +
                      describe_layout(all.data()));
  std::vector<dist::Work> work;
  for (const auto& [name, p] : slots) work.push_back(dist::broadcast_async(p.value(), 0));
  for (std::size_t i = 0; i < slots.size(); ++i) slots[i].second.set(work[i].wait());
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(Module& module,
                                                 DistributedDataParallelOptions options)
    : module_(module), options_(options), s_(std::make_unique<State>()) {
  if (!(options.bucket_cap_mb > 0) || !(options.first_bucket_cap_mb > 0))
    throw Error(ErrorCode::invalid_select,
                "nn::DistributedDataParallel: bucket_cap_mb and first_bucket_cap_mb must be "
                "positive");
  if (!dist::is_initialized())
    throw Error(ErrorCode::io_error,
                "nn::DistributedDataParallel: call distributed::init() first");
  broadcast_from_rank0(module.named_parameters(), "parameters");
  broadcast_from_rank0(module.named_buffers(), "buffers");
}

DistributedDataParallel::~DistributedDataParallel() {
  // Reductions still in flight write into buffers this object holds: wait for them.
  for (Bucket& b : s_->buckets)
    if (b.queued) b.done.wait();
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  if (options_.broadcast_buffers && dist::world_size() > 1) {
    const auto buffers = module_.named_buffers();
    if (!buffers.empty()) broadcast_from_rank0(buffers, "buffers");
  }
  return module_.forward(x);
}

std::size_t DistributedDataParallel::buckets() const { return s_->buckets.size(); }
double DistributedDataParallel::last_wait_seconds() const { return s_->wait_seconds; }

void DistributedDataParallel::backward(const Tensor& loss) {
  const char* op = "nn::DistributedDataParallel::backward";
  kiln::detail::node_of(loss, op);
  if (loss.numel() != 1)
    throw Error(ErrorCode::illegal_derive, std::string(op) + ": the loss must have one element, got shape " +
                                               shape_to_string(loss.shape()));
  State& s = *s_;
  for (Bucket& b : s.buckets)  // the previous step's reductions, if it failed half-way
    if (b.queued) b.done.wait();
  s.trained.clear();
  for (const Parameter& p : module_.parameters())
    if (p.requires_grad()) s.trained.push_back(p);
  std::vector<Tensor> values;
  for (const Parameter& p : s.trained) values.push_back(p.value());
  s.grads = values.empty() ? std::vector<Tensor>{} : gradients(loss, values);
  s.plan(options_.first_bucket_cap_mb, options_.bucket_cap_mb);
  for (Bucket& b : s.buckets) {
    b.waiting = b.members.size();
    b.input = b.members.size() == 1 ? nullptr : std::make_shared<Buffer>(b.dtype, b.count);
    b.output = std::make_shared<Buffer>(b.dtype, b.count);
  }
  s.next_to_queue = 0;

  // Targets in the order the backward pass produces them (the last parameters' first), so that
  // the evaluation's walk computes each bucket as early as it can; the loss last.
  std::vector<Node*> targets;
  std::vector<std::size_t> order;
  for (const Bucket& b : s.buckets)
    for (std::size_t k : b.members) order.push_back(k);
  std::vector<Tensor> by_order;
  for (std::size_t k : order) by_order.push_back(s.grads[k]);
  for (const Tensor& g : by_order) targets.push_back(g.node().get());
  targets.push_back(loss.node().get());

  class InOrder final : public kiln::detail::ResultListener {
   public:
    InOrder(State& s, const std::vector<std::size_t>& order, bool overlap)
        : s_(s), order_(order), overlap_(overlap) {}
    void ready(std::size_t index) override {
      if (overlap_ && index < order_.size()) s_.gradient_ready(order_[index]);
    }
   private:
    State& s_;
    const std::vector<std::size_t>& order_;
    bool overlap_;
  } listener(s, order, options_.overlap);
  kiln::detail::evaluate(targets, listener);
  if (!options_.overlap)
    for (std::size_t k : order) s.gradient_ready(k);

  const auto start = std::chrono::steady_clock::now();
  for (Bucket& b : s.buckets) {
    b.done.get();  // rethrows the reduction's error (a timeout, other shapes on another rank)
    b.queued = false;
  }
  s.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Each parameter's share of its bucket's mean becomes (or is added to) its gradient.
  for (std::size_t k = 0; k < s.trained.size(); ++k) {
    const Bucket& b = s.buckets[s.bucket_of[k]];
    const Tensor& v = s.trained[k].value();
    std::shared_ptr<Buffer> keep = b.output;
    void* at = static_cast<char*>(keep->data()) + static_cast<std::size_t>(s.offset[k]) * size_of(b.dtype);
    auto share = std::make_shared<Buffer>(b.dtype, v.numel(), at, [keep](void*) {});
    auto leaf = std::make_shared<Node>(kiln::detail::Op::store, b.dtype, v.shape(),
                                       std::vector<kiln::detail::NodePtr>{});
    kiln::detail::set_host_values(*leaf, std::move(share));
    const Tensor old = v.grad();
    if (old.defined()) {
      const Tensor total = old + Tensor(leaf);
      total.eval();
      auto sum = std::make_shared<Node>(kiln::detail::Op::store, b.dtype, v.shape(),
                                        std::vector<kiln::detail::NodePtr>{});
      kiln::detail::set_host_values(*sum, kiln::detail::host_buffer(*total.node()));
      leaf = std::move(sum);
    }
    v.node()->grad = std::move(leaf);
  }
  s.grads.clear();
}

void save_checkpoint_on_rank0(const Module& module, const Optimizer& optimizer,
                              const std::string& path,
                              const std::vector<std::pair<std::string, Tensor>>& extra) {
  std::string failure;
  if (dist::rank() == 0) {
    try {
      save_checkpoint(module, optimizer, path, extra);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  // Every rank learns whether the file was written, so none goes on to load a missing file.
  const Tensor ok = dist::broadcast(Tensor::from(std::vector<std::int32_t>{failure.empty() ? 1 : 0}), 0);
  if (ok.to_vector<std::int32_t>()[0] == 0)
    throw Error(ErrorCode::io_error,
                "nn::save_checkpoint_on_rank0: rank 0 could not write " + path +
                    (failure.empty() ? std::string() : ": " + failure));
}

}  // namespace kiln::nn
