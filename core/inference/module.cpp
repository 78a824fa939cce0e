#include "core/inference/module.h"

#include <algorithm>

namespace accel::inference {

std::vector<NamedParameter> Module::namedParameters(const std::string &prefix)
{
    std::vector<NamedParameter> out;
    for (auto &p : m_parameters)
        out.push_back({prefix + p->localName, p.get(), this});
    for (auto &[name, child] : m_children) {
        auto sub = child->namedParameters(prefix + name + ".");
        out.insert(out.end(), sub.begin(), sub.end());
    }
    return out;
}

Module *Module::findModule(const std::string &name)
{
    if (name.empty())
        return this;
    for (auto &[local, child] : m_children) {
        if (name == local)
            return child.get();
        if (name.size() > local.size() && name.compare(0, local.size(), local) == 0 && name[local.size()] == '.')
            return child->findModule(name.substr(local.size() + 1));
    }
    return nullptr;
}

void Module::registerTorchParameters(const std::function<bool(const std::string &)> &trainable,
                                     const std::string &prefix)
{
    for (auto &p : m_parameters) {
        if (!p->value.defined())
            continue;
        const bool grad = trainable(prefix + p->localName);
        if (torch::nn::Module::parameters_.contains(p->localName)) {
            torch::nn::Module::parameters_[p->localName] = p->value;
            p->value.set_requires_grad(grad);
        } else {
            register_parameter(p->localName, p->value, grad);
        }
    }
    for (auto &[name, child] : m_children)
        child->registerTorchParameters(trainable, prefix + name + ".");
}

void Module::clearHooks()
{
    m_hooks.clear();
    for (auto &entry : m_children)
        entry.second->clearHooks();
}

Parameter *Module::addParameter(const std::string &localName, std::vector<int64_t> shape)
{
    auto parameter = std::make_unique<Parameter>();
    parameter->localName = localName;
    parameter->shape = std::move(shape);
    m_parameters.push_back(std::move(parameter));
    return m_parameters.back().get();
}

void Module::removeParameter(const std::string &localName)
{
    m_parameters.erase(std::remove_if(m_parameters.begin(), m_parameters.end(),
                                      [&](const auto &p) { return p->localName == localName; }),
                       m_parameters.end());
}

Module::ForwardScope::ForwardScope(Module &module) : m_module(module)
{
    for (auto &hook : m_module.m_hooks)
        hook->preForward(m_module);
}

Module::ForwardScope::~ForwardScope()
{
    for (auto it = m_module.m_hooks.rbegin(); it != m_module.m_hooks.rend(); ++it)
        (*it)->postForward(m_module);
}

} // namespace accel::inference
