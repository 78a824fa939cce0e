// Collectives: the operations the distributed strategies need (sum and max all-reduce, sum
// reduce-scatter into a tensor, all-gather into a tensor, DDP's bucketed gradient mean) behind one
// interface, so a strategy does not care whether the bytes travel through a c10d process group
// (gloo on CPU, NCCL on GPUs) or shared memory between the ranks of one host (shmcollectives.h).
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace accel::runtime {

class Collectives {
public:
    virtual ~Collectives() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // In place: every rank ends with the element-wise sum.
    virtual void allReduceSum(torch::Tensor &tensor) = 0;
    // input holds size() equal chunks; rank r's output is the sum of every rank's chunk r.
    virtual void reduceScatterSum(torch::Tensor &output, const torch::Tensor &input) = 0;
    // output holds size() chunks of input's size; chunk r is rank r's input.
    virtual void allGather(torch::Tensor &output, const torch::Tensor &input) = 0;
    // The same, started now and finished by calling the returned function (which rethrows a
    // failure), so that computation overlaps the transfer (the sharding engine's prefetch).
    // Neither tensor may be touched until then. Every rank starts the same operations in the same
    // order; a later operation of this object waits for the earlier ones.
    using Pending = std::function<void()>;
    virtual Pending allGatherAsync(torch::Tensor output, torch::Tensor input)
    {
        allGather(output, input);
        return [] {};
    }
    // Element-wise maximum over the ranks, in place. By default an all-gather and its maximum.
    virtual void allReduceMax(torch::Tensor &tensor);
    // DDP's gradient bucket: `tensors` (contiguous, of one dtype) taken together as one vector;
    // every rank ends with the element-wise mean over the ranks written back into them, the same
    // bits on every rank. Started now (the tensors may not be touched until the returned function
    // has run), in the order every rank starts them.
    virtual Pending allReduceMeanAsync(std::vector<torch::Tensor> tensors) = 0;
    virtual std::string transport() const = 0;
};

// Over a c10d backend (gloo's _reduce_scatter_base / _allgather_base, libtorch 2.x).
class ProcessGroupCollectives : public Collectives {
public:
    explicit ProcessGroupCollectives(c10::intrusive_ptr<c10d::Backend> group);
    int rank() const override { return m_group->getRank(); }
    int size() const override { return m_group->getSize(); }
    void allReduceSum(torch::Tensor &tensor) override;
    void reduceScatterSum(torch::Tensor &output, const torch::Tensor &input) override;
    void allGather(torch::Tensor &output, const torch::Tensor &input) override;
    Pending allGatherAsync(torch::Tensor output, torch::Tensor input) override;
    void allReduceMax(torch::Tensor &tensor) override;
    // Each tensor divided by the group's size into a flat staging buffer, which is all-reduced.
    Pending allReduceMeanAsync(std::vector<torch::Tensor> tensors) override;
    std::string transport() const override { return "process-group"; }

private:
    c10::intrusive_ptr<c10d::Backend> m_group;
    // Staging buffers of finished means, reused by the next of the same size and dtype.
    std::shared_ptr<std::vector<torch::Tensor>> m_staging = std::make_shared<std::vector<torch::Tensor>>();
};

// Makes a process group over a subset of the ranks (hybrid sharding's machine and replica
// groups): `prefix` names the group in the store, `rank`/`size` are this rank's place in it.
using GroupFactory = std::function<c10::intrusive_ptr<c10d::Backend>(const std::string &prefix, int rank, int size)>;

} // namespace accel::runtime
