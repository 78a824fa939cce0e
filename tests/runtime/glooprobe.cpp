// One rank of the gloo check (tst_gloo): joins a c10d TCPStore and a ProcessGroupGloo made from the
// wheel's libtorch with Debian's gloo headers, runs each collective the runtime relies on and prints
// one line per result ("name v0 v1 ..."), or "unsupported name: reason" when libtorch refuses one.
// Usage: accel-runtime-probe gloo RANK WORLD PORT
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace {

void print(const std::string &name, const torch::Tensor &tensor)
{
    std::ostringstream line;
    line << name;
    const torch::Tensor flat = tensor.to(torch::kDouble).flatten();
    for (int64_t i = 0; i < flat.numel(); ++i)
        line << ' ' << flat[i].item<double>();
    std::cout << line.str() << std::endl;
}

template <typename F>
void attempt(const std::string &name, F &&run)
{
    try {
        run();
    } catch (const std::exception &e) {
        std::string what = e.what();
        std::cout << "unsupported " << name << ": " << what.substr(0, what.find('\n')) << std::endl;
    }
}

} // namespace

// `accel-runtime-probe gloo ...` (runtimeprobe.cpp): argv[0] is the mode word.
int glooProbe(int argc, char **argv)
{
    if (argc != 4) {
        std::cerr << "usage: accel-runtime-probe gloo RANK WORLD PORT\n";
        return 2;
    }
    const int rank = std::atoi(argv[1]), world = std::atoi(argv[2]);
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = uint16_t(std::atoi(argv[3]));
    storeOptions.isServer = rank == 0;
    storeOptions.numWorkers = world;
    storeOptions.timeout = std::chrono::seconds(60);
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", storeOptions);

    // The options object comes from the library; our view of it (compiled against Debian's gloo
    // headers) must read back what the library stored.
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(12345));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    options->threads = 2;
    std::cout << "options timeout_ms " << options->timeout.count() << " threads " << options->threads << " devices "
              << options->devices.size() << std::endl;
    c10::intrusive_ptr<c10d::Backend> group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("gloo", store), rank, world, options);
    std::cout << "backend " << group->getBackendName() << " rank " << group->getRank() << " size " << group->getSize()
              << std::endl;

    // all-reduce SUM: rank r contributes r+1 in each of 4 elements.
    {
        std::vector<torch::Tensor> tensors{torch::full({4}, float(rank + 1))};
        group->allreduce(tensors)->wait();
        print("allreduce_sum_f32", tensors[0]);
    }
    attempt("allreduce_sum_bf16", [&] {
        std::vector<torch::Tensor> tensors{torch::full({4}, float(rank + 1)).to(torch::kBFloat16)};
        group->allreduce(tensors)->wait();
        print("allreduce_sum_bf16", tensors[0]);
    });
    attempt("allreduce_avg_f32", [&] {
        std::vector<torch::Tensor> tensors{torch::full({4}, float(rank + 1))};
        c10d::AllreduceOptions avg;
        avg.reduceOp = c10d::ReduceOp::AVG;
        group->allreduce(tensors, avg)->wait();
        print("allreduce_avg_f32", tensors[0]);
    });
    // reduce-scatter into a tensor: input [world * 2] = rank*100 + index; rank r keeps elements 2r, 2r+1.
    attempt("reduce_scatter_tensor", [&] {
        torch::Tensor input = torch::arange(world * 2, torch::kFloat) + float(rank * 100);
        torch::Tensor output = torch::empty({2}, torch::kFloat);
        group->_reduce_scatter_base(output, input)->wait();
        print("reduce_scatter_tensor", output);
    });
    // all-gather into a tensor: rank r contributes [r, r+0.5].
    attempt("allgather_into_tensor", [&] {
        torch::Tensor input = torch::tensor({float(rank), float(rank) + 0.5f});
        torch::Tensor output = torch::empty({world * 2}, torch::kFloat);
        group->_allgather_base(output, input)->wait();
        print("allgather_into_tensor", output);
    });
    {
        std::vector<torch::Tensor> tensors{rank == 0 ? torch::tensor({7.0f, 8.0f}) : torch::zeros({2})};
        group->broadcast(tensors)->wait();
        print("broadcast", tensors[0]);
    }
    group->barrier()->wait();
    std::cout << "done" << std::endl;
    return 0;
}
