// The offload hook of one module (Accelerate's AlignDevicesHook with offload=True): before the
// forward each offloaded parameter is materialised from its weights-map view onto the execution
// device in the compute dtype; after the forward it is released. Includes libtorch.
#pragma once

#include "core/inference/module.h"

#include <optional>
#include <vector>

namespace accel::inference {

class OffloadHook : public ForwardHook {
public:
    struct Slot {
        Parameter *parameter = nullptr;
        at::Tensor source; // CPU view over a mapping (or a CPU copy), checkpoint dtype
    };
    OffloadHook(at::Device device, std::optional<at::ScalarType> dtype) : m_device(device), m_dtype(dtype) {}
    void addSlot(Slot slot) { m_slots.push_back(std::move(slot)); }
    const std::vector<Slot> &slots() const { return m_slots; }

    void preForward(Module &module) override;
    void postForward(Module &module) override;
    int64_t materialisations() const { return m_materialisations; }

private:
    at::Device m_device;
    std::optional<at::ScalarType> m_dtype;
    std::vector<Slot> m_slots;
    int m_depth = 0; // nested scopes of the same module (a tied head inside a forward)
    int64_t m_materialisations = 0;
};

} // namespace accel::inference
