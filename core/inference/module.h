// The module tree of the model families: every module owns named tensors (its parameters, by
// Hugging Face's local names) and named children, so the full names are exactly the checkpoint's
// ("transformer.h.0.attn.c_attn.weight"). Forward passes open a ForwardScope, which runs the
// module's hooks around the forward (the dispatcher's offload hooks: weights brought to the
// execution device before, released after).
//
// Every module is also a torch::nn::Module named after the Hugging Face class
// ("LlamaDecoderLayer"), its children registered under their local names, so that training
// (the causal_lm recipe) prepares the same tree with the Accelerator: registerTorchParameters()
// hands the parameters' tensors to torch's registry (the same tensors: a strategy that moves
// them moves what the forward reads). Inference never registers them. Includes libtorch: only
// torch .cpp files include it.
#pragma once

#include <torch/nn/module.h>

#include <functional>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace accel::inference {

class Module;

// Runs around a module's forward (Accelerate's ModelHook: pre_forward / post_forward).
class ForwardHook {
public:
    virtual ~ForwardHook() = default;
    virtual void preForward(Module &module) = 0;
    virtual void postForward(Module &module) = 0;
};

struct Parameter {
    std::string localName;
    std::vector<int64_t> shape; // expected shape, checked when loading
    at::Tensor value;           // undefined while offloaded
    bool keepDtype = false;     // loaded in the checkpoint's dtype, whatever the compute dtype (quantized data)
};

struct NamedParameter {
    std::string name; // full name
    Parameter *parameter = nullptr;
    Module *owner = nullptr;
};

class Module : public torch::nn::Module {
public:
    explicit Module(std::string typeName) : torch::nn::Module(typeName), m_typeName(std::move(typeName)) {}
    ~Module() override = default;
    Module(const Module &) = delete;
    Module &operator=(const Module &) = delete;

    const std::string &typeName() const { return m_typeName; }
    // This module's own parameters (torch::nn::Module::parameters() lists the registered tensors).
    const std::vector<std::unique_ptr<Parameter>> &parameters() const { return m_parameters; }
    const std::vector<std::pair<std::string, std::shared_ptr<Module>>> &children() const { return m_children; }

    // This module's and its descendants' parameters with full names under `prefix`.
    std::vector<NamedParameter> namedParameters(const std::string &prefix = {});
    // The descendant with that full name ("" is this module), or null.
    Module *findModule(const std::string &name);

    // Training: registers every parameter's tensor (loaded, defined) with torch under its local
    // name, requiring a gradient where `trainable(full name)` says so. Registered again, a name
    // takes the parameter's current tensor.
    void registerTorchParameters(const std::function<bool(const std::string &)> &trainable,
                                 const std::string &prefix = {});

    void addHook(std::shared_ptr<ForwardHook> hook) { m_hooks.push_back(std::move(hook)); }
    void clearHooks(); // recursive
    const std::vector<std::shared_ptr<ForwardHook>> &hooks() const { return m_hooks; }

    // Runs the hooks' preForward now and their postForward (in reverse) when destroyed.
    class ForwardScope {
    public:
        explicit ForwardScope(Module &module);
        ~ForwardScope();
        ForwardScope(const ForwardScope &) = delete;
        ForwardScope &operator=(const ForwardScope &) = delete;

    private:
        Module &m_module;
    };

protected:
    Parameter *addParameter(const std::string &localName, std::vector<int64_t> shape);
    void removeParameter(const std::string &localName);
    template <typename M>
    M *addChild(const std::string &localName, std::unique_ptr<M> child)
    {
        std::shared_ptr<M> shared(std::move(child));
        register_module(localName, shared);
        m_children.emplace_back(localName, shared);
        return shared.get();
    }

private:
    std::string m_typeName;
    std::vector<std::unique_ptr<Parameter>> m_parameters;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> m_children;
    std::vector<std::shared_ptr<ForwardHook>> m_hooks;
};

} // namespace accel::inference
