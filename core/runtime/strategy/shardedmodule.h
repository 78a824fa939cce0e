// ShardedModule: the holder Accelerator::wrap(module) returns. libtorch's C++ modules have no
// forward hooks, so a program runs a wrapped unit's forward through it:
//     auto block = accelerator.wrap(blocks[i]);            // before prepareModel()
//     x = (*block)([&] { return blocks[i]->forward(x); }); // in the model's forward
// Under ZeRO-3 / FULL_SHARD the unit's flat parameter is all-gathered before the call, freed
// after it (when the plan reshards after forward), gathered again when backward reaches the
// unit and its gradients reduce-scattered; under DDP and ZeRO-1/2 the call just runs.
// Change a unit's parameters in place (initialisation, loading) inside modify(): a unit of the
// sharding engine (built with Accelerator::wrapBuilt, or prepared) is whole for the call and every
// rank keeps rank 0's result; any other holder just runs the call (before prepareModel(), which
// broadcasts rank 0's values; after it, the change must be the same on every rank).
// Torch-light: the template needs <torch/torch.h> only where it is instantiated.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}

namespace accel::runtime {

// What a strategy does around a wrapped unit's forward (implemented by the ShardingEngine).
class UnitHost {
public:
    virtual ~UnitHost() = default;
    virtual void beforeForward(size_t unit) = 0;
    virtual void afterForward(size_t unit, const at::Tensor &output) = 0;
    virtual void modifyUnit(size_t unit, const std::function<void()> &change) = 0;
};

class ShardedModule {
public:
    explicit ShardedModule(const std::shared_ptr<torch::nn::Module> &module) : m_module(module) {}

    template <typename Forward>
    auto operator()(Forward &&forward) -> decltype(forward())
    {
        if (m_host)
            m_host->beforeForward(m_unit);
        auto output = forward();
        if (m_host)
            m_host->afterForward(m_unit, output);
        return output;
    }

    // `change` writes the module's parameters (under torch::NoGradGuard); rank 0's values win.
    void modify(const std::function<void()> &change)
    {
        if (m_host)
            m_host->modifyUnit(m_unit, change);
        else
            change();
    }

    // The wrapped module, or null once nothing else owns it: the holder does not keep it alive
    // (the model and, after prepareModel(), the Accelerator do), so a model may keep the holder of
    // its own root unit without owning itself.
    std::shared_ptr<torch::nn::Module> module() const { return m_module.lock(); }
    // Set by the strategy when prepareModel() makes the module a unit.
    void attach(UnitHost *host, size_t unit)
    {
        m_host = host;
        m_unit = unit;
    }
    bool isUnit() const { return m_host != nullptr; }

private:
    std::weak_ptr<torch::nn::Module> m_module;
    UnitHost *m_host = nullptr;
    size_t m_unit = 0;
};

} // namespace accel::runtime
