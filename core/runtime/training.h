// The optimizer and scheduler wrappers prepare() returns (facts 7.1): the optimizer's step() and
// zeroGrad() do nothing while gradients are being accumulated; the scheduler steps only on real
// optimizer steps, numProcesses() times per step unless batches are split, so a schedule written
// for one process keeps its length in samples.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace accel::runtime {

class Accelerator;

class AcceleratedOptimizer {
public:
    AcceleratedOptimizer(Accelerator &accelerator, torch::optim::Optimizer &optimizer);

    void step();
    void zeroGrad(); // set_to_none, like Accelerate's default
    double lr(size_t group = 0) const;
    void setLr(double lr); // every group
    int64_t stepsTaken() const { return m_steps; }
    // The last step() was skipped by fp16 loss scaling (inf/NaN gradients); the scheduler then holds.
    bool stepWasSkipped() const { return m_skipped; }
    torch::optim::Optimizer &optimizer() { return m_optimizer; }

private:
    Accelerator &m_accelerator;
    torch::optim::Optimizer &m_optimizer;
    int64_t m_steps = 0;
    bool m_skipped = false;
};

// A LambdaLR: lr = base_lr * lambda(lastStep), lastStep counted in scheduler steps.
class AcceleratedScheduler {
public:
    AcceleratedScheduler(Accelerator &accelerator, AcceleratedOptimizer &optimizer,
                         std::function<double(int64_t)> lambda);

    void step();
    int64_t lastStep() const { return m_lastStep; }
    void setLastStep(int64_t step); // restores the state (checkpoints)
    double lr() const;

private:
    void apply();

    Accelerator &m_accelerator;
    AcceleratedOptimizer &m_optimizer;
    std::function<double(int64_t)> m_lambda;
    std::vector<double> m_baseLrs;
    int64_t m_lastStep = 0;
};

} // namespace accel::runtime
