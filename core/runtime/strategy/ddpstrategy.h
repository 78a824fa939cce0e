// DdpStrategy: every rank holds the whole model, gradients and optimizer state; gradients are
// averaged by the bucketed all-reduce overlapped with backward (GradientSync, through shared
// memory when every rank is on this host). Also runs FSDP's NO_SHARD and ZeRO stage 0, which
// are this same scheme, and any plan on one process. A frozen model (no parameter requires a
// gradient) gets one too: whole on every rank, nothing to synchronise.
#pragma once

#include "core/runtime/distributedenv.h"
#include "core/runtime/strategy/distributedstrategy.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace accel::runtime {

class GradientSync;
class Fp8GradientAllReduce;

class DdpStrategy : public DistributedStrategy {
public:
    // `group` is null with one process (nothing to synchronise).
    DdpStrategy(std::string name, c10::intrusive_ptr<c10d::Backend> group, c10::intrusive_ptr<c10d::Store> store,
                const DistributedEnv &env, int64_t bucketCapBytes, double timeoutS);
    ~DdpStrategy() override;

    std::string name() const override { return m_name; }
    std::string gradientTransport() const override;
    void prepareModel(const std::shared_ptr<torch::nn::Module> &model,
                      const std::vector<std::shared_ptr<ShardedModule>> &units) override;
    void setSyncEnabled(bool enabled) override;
    void afterBackward(bool sync) override;
    void finishGradients() override;
    double clipGradNorm(double maxNorm, double normType) override;
    double gradientNormPart(double normType) override;
    void scaleGradients(double factor) override;

    // MS-AMP O1/O2: these weights' gradients are all-reduced in FP8 with a shared scale
    // (fp8allreduce.h) after each synchronising backward, not by the float all-reduce. Call before
    // prepareModel; nothing happens with one process.
    void reduceInFp8(std::vector<torch::Tensor> weights);
    const Fp8GradientAllReduce *fp8AllReduce() const { return m_fp8.get(); }
    Fp8GradientAllReduce *fp8AllReduce() { return m_fp8.get(); }

private:
    std::string m_name;
    c10::intrusive_ptr<c10d::Backend> m_group;
    c10::intrusive_ptr<c10d::Store> m_store;
    DistributedEnv m_env;
    int64_t m_bucketCapBytes;
    double m_timeoutS;
    std::shared_ptr<torch::nn::Module> m_model;
    std::unique_ptr<GradientSync> m_sync;
    std::vector<torch::Tensor> m_fp8Weights;
    std::unique_ptr<Fp8GradientAllReduce> m_fp8;
};

} // namespace accel::runtime
