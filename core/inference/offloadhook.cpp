#include "core/inference/offloadhook.h"

#include "core/inference/torchtensors.h"

namespace accel::inference {

void OffloadHook::preForward(Module &)
{
    if (m_depth++ > 0)
        return;
    for (auto &slot : m_slots)
        slot.parameter->value = placeTensor(slot.source, m_device, slot.parameter->keepDtype ? std::nullopt : m_dtype);
    ++m_materialisations;
}

void OffloadHook::postForward(Module &)
{
    if (--m_depth > 0)
        return;
    for (auto &slot : m_slots)
        slot.parameter->value = at::Tensor();
}

} // namespace accel::inference
