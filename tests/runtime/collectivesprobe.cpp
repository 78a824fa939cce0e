// accel-runtime-probe collectives: one rank of the sharding collectives' tests and benchmark. Joins a c10d
// TCPStore and a gloo group (RANK, WORLD_SIZE, MASTER_PORT from the environment, loopback),
// announces its host under rank/<N> as rendezvous does, then:
//   check   transport=shm|pg out=DIR n= slot_kb=   every collective on fixed inputs; each result
//           to DIR/<case>.rank<r>.bin (raw values) for the test to compare with the formula
//   stall   transport=shm|pg timeout=               rank 1 leaves right after setup; the others
//           start an all-gather that must fail within the timeout
//   bench   sizes=KiB,KiB,... rounds=               reduce-scatter and all-gather of float32
//           buffers of each size through shared memory, through ProcessGroupCollectives and
//           through the gloo group's own _reduce_scatter_base / _allgather_base; rank 0 prints
//           "bench <op> <bytes> <shm_us> <pg_us> <c10d_us>" (medians of the rounds)
// other_host=NAME: the last rank announces that host name (to see shared memory refused). With
// out=DIR every rank writes its process id to DIR/pid.rank<r>. Prints
// "transport <name>" once set up; exit 1 on a failed collective, 2 on bad arguments.
#include "core/runtime/shmcollectives.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <unistd.h>

using namespace accel::runtime;

namespace {

std::map<std::string, std::string> g_args;

std::string arg(const std::string &key, const std::string &fallback = {})
{
    auto it = g_args.find(key);
    return it == g_args.end() ? fallback : it->second;
}

int envInt(const char *name)
{
    const char *value = std::getenv(name);
    if (!value) {
        std::cerr << "accel-runtime-probe collectives: " << name << " is not set\n";
        std::exit(2);
    }
    return std::atoi(value);
}

// The inputs: a fixed pseudo-random value per (rank, index), 24 significant bits in [-1, 1).
// tst_shmcollectives computes the same.
double value(int rank, int64_t index)
{
    uint64_t h = uint64_t(rank) * 1000003u + uint64_t(index) + 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return double(h >> 40) / 8388608.0 - 1.0;
}

torch::Tensor inputs(int rank, int64_t count, c10::ScalarType dtype, int64_t offset = 0)
{
    auto values = torch::empty({count}, torch::kFloat64);
    auto *data = values.data_ptr<double>();
    for (int64_t i = 0; i < count; ++i)
        data[i] = value(rank, offset + i);
    return values.to(dtype);
}

void save(const std::string &name, int rank, const torch::Tensor &tensor)
{
    std::ofstream file(arg("out") + "/" + name + ".rank" + std::to_string(rank) + ".bin", std::ios::binary);
    file.write(static_cast<const char *>(tensor.data_ptr()), std::streamsize(tensor.nbytes()));
}

int check(Collectives &collectives, int rank, int world)
{
    const int64_t n = std::stoll(arg("n", "40003"));
    for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
        const std::string suffix = dtype == torch::kFloat32 ? "_f32" : "_f64";
        auto reduced = inputs(rank, n, dtype);
        collectives.allReduceSum(reduced);
        save("allreduce" + suffix, rank, reduced);
        auto scattered = torch::empty({n}, dtype);
        collectives.reduceScatterSum(scattered, inputs(rank, n * world, dtype));
        save("reducescatter" + suffix, rank, scattered);
        auto gathered = torch::empty({n * world}, dtype);
        collectives.allGather(gathered, inputs(rank, n, dtype));
        save("allgather" + suffix, rank, gathered);
    }
    // Two asynchronous all-gathers in flight, then a synchronous one behind them.
    auto first = torch::empty({n * world}, torch::kFloat32), second = torch::empty({n * world}, torch::kFloat32);
    auto waitFirst = collectives.allGatherAsync(first, inputs(rank, n, torch::kFloat32));
    auto waitSecond = collectives.allGatherAsync(second, inputs(rank, n, torch::kFloat32, n));
    auto reduced = inputs(rank, n, torch::kFloat32);
    collectives.allReduceSum(reduced);
    waitSecond();
    waitFirst();
    save("async_first_f32", rank, first);
    save("async_second_f32", rank, second);
    save("async_allreduce_f32", rank, reduced);
    // Bytes of an odd count.
    auto bytes = torch::arange(rank * 7, rank * 7 + 1001, torch::kInt64).remainder(251).to(torch::kUInt8);
    auto allBytes = torch::empty({1001 * world}, torch::kUInt8);
    collectives.allGather(allBytes, bytes);
    save("allgather_u8", rank, allBytes);
    return 0;
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Microseconds per call of `run`: median over rounds of enough calls to take about 0.1 s.
template <typename F>
double timeOf(c10d::Backend &group, F &&run)
{
    using Clock = std::chrono::steady_clock;
    run();
    group.barrier()->wait();
    const auto start = Clock::now();
    run();
    const double once = std::chrono::duration<double>(Clock::now() - start).count();
    // Every rank must run the same number of calls: rank 0's estimate decides.
    auto calls = torch::tensor({int64_t(std::clamp(0.1 / std::max(once, 1e-7), 3.0, 2000.0))});
    std::vector<torch::Tensor> broadcast{calls};
    group.broadcast(broadcast)->wait();
    const int64_t count = calls.item<int64_t>();
    std::vector<double> rounds;
    for (int round = 0, total = std::stoi(arg("rounds", "5")); round < total; ++round) {
        group.barrier()->wait();
        const auto begin = Clock::now();
        for (int64_t i = 0; i < count; ++i)
            run();
        rounds.push_back(std::chrono::duration<double>(Clock::now() - begin).count() * 1e6 / double(count));
    }
    return median(rounds);
}

int bench(ShmCollectives &shm, ProcessGroupCollectives &group, c10d::Backend &raw, int rank, int world)
{
    std::stringstream sizes(arg("sizes", "64,256,1024,4096,16384,65536"));
    for (std::string kib; std::getline(sizes, kib, ',');) {
        const int64_t bytes = std::stoll(kib) * 1024;
        const int64_t whole = bytes / 4, chunk = whole / world;
        auto big = inputs(rank, chunk * world, torch::kFloat32), small = torch::empty({chunk}, torch::kFloat32);
        auto gathered = torch::empty({chunk * world}, torch::kFloat32);
        const double shmScatter = timeOf(raw, [&] { shm.reduceScatterSum(small, big); });
        const double ourScatter = timeOf(raw, [&] { group.reduceScatterSum(small, big); });
        const double rawScatter = timeOf(raw, [&] { raw._reduce_scatter_base(small, big)->wait(); });
        const double shmGather = timeOf(raw, [&] { shm.allGather(gathered, small); });
        const double ourGather = timeOf(raw, [&] { group.allGather(gathered, small); });
        const double rawGather = timeOf(raw, [&] { raw._allgather_base(gathered, small)->wait(); });
        if (rank == 0) {
            std::cout << "bench reduce_scatter " << chunk * world * 4 << " " << shmScatter << " " << ourScatter << " "
                      << rawScatter << "\n"
                      << "bench all_gather " << chunk * world * 4 << " " << shmGather << " " << ourGather << " "
                      << rawGather << std::endl;
        }
    }
    return 0;
}

} // namespace

// `accel-runtime-probe collectives ...` (runtimeprobe.cpp): argv[0] is the mode word.
int collectivesProbe(int argc, char **argv)
{
    if (argc < 2) {
        std::cerr << "usage: accel-runtime-probe collectives check|stall|bench [key=value ...]\n";
        return 2;
    }
    const std::string mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string text = argv[i];
        const auto equals = text.find('=');
        if (equals == std::string::npos) {
            std::cerr << "accel-runtime-probe collectives: expected key=value, got " << text << "\n";
            return 2;
        }
        g_args[text.substr(0, equals)] = text.substr(equals + 1);
    }
    if (mode != "check" && mode != "stall" && mode != "bench") {
        std::cerr << "accel-runtime-probe collectives: unknown mode " << mode << " (check, stall or bench)\n";
        return 2;
    }
    const int rank = envInt("RANK"), world = envInt("WORLD_SIZE");
    const double timeoutS = std::stod(arg("timeout", "60"));
    c10d::TCPStoreOptions storeOptions;
    storeOptions.port = uint16_t(envInt("MASTER_PORT"));
    storeOptions.isServer = rank == 0;
    storeOptions.numWorkers = world;
    storeOptions.timeout = std::chrono::seconds(60);
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", storeOptions);
    char hostname[256] = {};
    ::gethostname(hostname, sizeof(hostname) - 1);
    const std::string host = rank == world - 1 ? arg("other_host", hostname) : std::string(hostname);
    const std::string announced = host + " pid " + std::to_string(::getpid());
    if (!arg("out").empty())
        std::ofstream(arg("out") + "/pid.rank" + std::to_string(rank)) << ::getpid() << "\n";
    store->set("rank/" + std::to_string(rank), std::vector<uint8_t>(announced.begin(), announced.end()));
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(int64_t(timeoutS * 1000)));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    options->threads = 2;
    c10::intrusive_ptr<c10d::Backend> group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("gloo", store), rank, world, options);
    std::vector<int> members;
    for (int r = 0; r < world; ++r)
        members.push_back(r);
    std::string why;
    const size_t slotBytes = size_t(std::stoll(arg("slot_kb", "4096"))) * 1024;
    auto shm = ShmCollectives::create(*store, "probe", rank, members, timeoutS, &why, slotBytes);
    ProcessGroupCollectives processGroup(group);
    const bool wantShm = arg("transport", "shm") == "shm" || mode == "bench";
    if (wantShm && !shm) {
        std::cout << "transport process-group: " << why << std::endl;
        if (mode == "bench") {
            std::cerr << "accel-runtime-probe collectives: the benchmark needs shared memory: " << why << "\n";
            return 1;
        }
    }
    Collectives &collectives = wantShm && shm ? static_cast<Collectives &>(*shm) : processGroup;
    if (rank == 0)
        std::cout << "transport " << collectives.transport() << std::endl;
    try {
        if (mode == "check")
            return check(collectives, rank, world);
        if (mode == "bench")
            return bench(*shm, processGroup, *group, rank, world);
        // stall
        if (rank == 1)
            return 0; // never arrives
        auto output = torch::empty({4 * world}, torch::kFloat32);
        const auto start = std::chrono::steady_clock::now();
        try {
            collectives.allGather(output, torch::ones({4}));
        } catch (const std::exception &e) {
            std::cerr << "accel-runtime-probe collectives: " << e.what() << " (after "
                      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s)\n";
            std::_Exit(1); // the process group's threads may still wait for the peer
        }
        std::cerr << "accel-runtime-probe collectives: the all-gather finished without the peer\n";
        return 1;
    } catch (const std::exception &e) {
        std::cerr << "accel-runtime-probe collectives: " << e.what() << "\n";
        return 1;
    }
}
