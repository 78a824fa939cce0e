// Collectives: the three operations the distributed strategies need (sum all-reduce, sum
// reduce-scatter into a tensor, all-gather into a tensor) behind one interface, so a strategy
// does not care whether the bytes travel through a c10d process group (gloo on CPU, NCCL on GPUs)
// or shared memory between the ranks of one host (shmcollectives.h). Includes libtorch: only torch .cpp files include
// it.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

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
    std::string transport() const override { return "process-group"; }

private:
    c10::intrusive_ptr<c10d::Backend> m_group;
};

// Makes a process group over a subset of the ranks (hybrid sharding's machine and replica
// groups): `prefix` names the group in the store, `rank`/`size` are this rank's place in it.
using GroupFactory = std::function<c10::intrusive_ptr<c10d::Backend>(const std::string &prefix, int rank, int size)>;

} // namespace accel::runtime
