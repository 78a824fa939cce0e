// DdpStrategy: every rank holds the whole model, gradients and optimizer state; gradients are
// averaged by the bucketed mean overlapped with backward (GradientSync) on the data-parallel group's
// Collectives (shared memory when every rank is on this host). Also runs FSDP's NO_SHARD and ZeRO
// stage 0, which are this same scheme, and any plan on one process. A frozen model (no parameter
// requires a gradient) gets one too: whole on every rank, nothing to synchronise.
// Includes libtorch: only torch .cpp files include it.
#pragma once

#include "core/runtime/strategy/collectives.h"
#include "core/runtime/strategy/distributedstrategy.h"

#include <memory>

namespace accel::runtime {

class GradientSync;
class MixedPrecisionPolicy;
class PrecisionGradientReduction;

class DdpStrategy : public DistributedStrategy {
public:
    // `group` is null with one process or for a frozen model (nothing to synchronise). `precision`
    // (may be null) says which gradients travel in another format (MS-AMP's FP8 all-reduce).
    DdpStrategy(std::string name, std::unique_ptr<Collectives> group, MixedPrecisionPolicy *precision,
                int64_t bucketCapBytes);
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

private:
    std::string m_name;
    std::unique_ptr<Collectives> m_group;
    MixedPrecisionPolicy *m_precision;
    int64_t m_bucketCapBytes;
    std::shared_ptr<torch::nn::Module> m_model;
    std::unique_ptr<GradientSync> m_sync;
    std::shared_ptr<PrecisionGradientReduction> m_lowPrecision; // the recipe's own reduction of some gradients
};

} // namespace accel::runtime
