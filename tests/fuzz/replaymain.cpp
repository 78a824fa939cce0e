// The driver a fuzz target links in the normal (g++) build, in place of libFuzzer: it runs
// LLVMFuzzerTestOneInput on every file of the given corpus folders (or files), then on a bounded
// number of mutations of them made with a fixed seed, so every run checks the same inputs. A
// crash, sanitizer report or abort() in the target fails the test; a mutated input can be written
// out with --dump N FILE to reproduce it.
//
// Like libFuzzer's -rss_limit_mb and -timeout, an input may use at most --memory-mb of address
// space (not under a sanitizer, which reserves its own) and should take at most --max-ms: a slower
// one is reported by number and fails the run.
//
//   fuzz_x [--mutations N] [--seed S] [--dump N FILE] [--memory-mb M] [--max-ms T] CORPUS...
#include "tests/helpers/sanitizerbuild.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

namespace fs = std::filesystem;

std::string readAll(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// xorshift64*: the same sequence on every machine.
struct Random {
    uint64_t state;
    uint64_t next()
    {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
    size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

// Pieces that parsers of JSON, YAML, JSON lines and command lines care about.
const char *const kTokens[] = {"{",
                               "}",
                               "[",
                               "]",
                               "\"",
                               ",",
                               ":",
                               "\n",
                               "\\",
                               "\\u0",
                               "null",
                               "true",
                               "false",
                               "-1",
                               "0",
                               "1e999",
                               "1.5",
                               "NaN",
                               "2147483648",
                               "18446744073709551616",
                               "-9223372036854775809",
                               "&a ",
                               "*a",
                               "<<: ",
                               "- ",
                               "--",
                               "--num_processes",
                               "=",
                               "\xff",
                               "\xc3",
                               "\x00",
                               "    ",
                               "__metadata__",
                               "\"dtype\":\"F32\""};

void mutate(std::string &bytes, const std::vector<std::string> &corpus, Random &random)
{
    const size_t edits = 1 + random.below(4);
    for (size_t e = 0; e < edits; ++e) {
        const size_t at = random.below(bytes.size() + 1);
        switch (random.below(9)) {
        case 0: // flip a byte
            if (!bytes.empty())
                bytes[std::min(at, bytes.size() - 1)] ^= static_cast<char>(1u << random.below(8));
            break;
        case 1: // insert a token
            bytes.insert(at, kTokens[random.below(std::size(kTokens))]);
            break;
        case 2: // delete a range
            bytes.erase(at, random.below(16) + 1);
            break;
        case 3: { // duplicate a range elsewhere
            if (bytes.empty())
                break;
            const size_t from = random.below(bytes.size());
            const std::string piece = bytes.substr(from, random.below(64) + 1);
            bytes.insert(random.below(bytes.size() + 1), piece);
            break;
        }
        case 4: // truncate
            bytes.resize(at);
            break;
        case 5: { // splice with another corpus input
            const std::string &other = corpus[random.below(corpus.size())];
            const size_t from = random.below(other.size() + 1);
            bytes = bytes.substr(0, at) + other.substr(from);
            break;
        }
        case 6: { // deep nesting
            const size_t depth = 1 + random.below(random.below(2) ? 100 : 5000);
            const char open = random.below(2) ? '[' : '{';
            bytes.insert(at, std::string(depth, open));
            break;
        }
        case 7: // set a byte to an ASCII character
            if (!bytes.empty())
                bytes[std::min(at, bytes.size() - 1)] = static_cast<char>(32 + random.below(95));
            break;
        default: { // repeat a short piece many times (wide objects, long lines)
            if (bytes.empty())
                break;
            const size_t from = random.below(bytes.size());
            const std::string piece = bytes.substr(from, random.below(24) + 1);
            std::string repeated;
            for (size_t i = 0, n = random.below(400) + 2; i < n; ++i)
                repeated += piece;
            bytes.insert(at, repeated);
            break;
        }
        }
    }
}

// Which input is running, for the message of a crash (signal handlers may only write).
volatile long g_current = -1;
char g_crashText[160];

void reportCrash(int signal)
{
    const long current = g_current;
    int n = current < 0
                ? std::snprintf(g_crashText, sizeof g_crashText, "crashed on a corpus input (signal %d)\n", signal)
                : std::snprintf(g_crashText, sizeof g_crashText,
                                "crashed on mutation %ld (signal %d): rerun with --dump %ld FILE\n", current, signal,
                                current);
    if (n > 0)
        (void)!::write(2, g_crashText, static_cast<size_t>(n));
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

void installCrashReport()
{
    static std::vector<char> stack(1 << 16); // a stack overflow still gets its message
    stack_t alternate{};
    alternate.ss_sp = stack.data();
    alternate.ss_size = stack.size();
    ::sigaltstack(&alternate, nullptr);
    struct sigaction action {};
    action.sa_handler = reportCrash;
    action.sa_flags = SA_ONSTACK | SA_RESETHAND;
    for (int signal : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL})
        ::sigaction(signal, &action, nullptr);
}

int usage(const char *program)
{
    std::fprintf(stderr,
                 "usage: %s [--mutations N] [--seed S] [--dump N FILE] [--memory-mb M] [--max-ms T] CORPUS...\n",
                 program);
    return 2;
}

} // namespace

int main(int argc, char **argv)
{
    long mutations = 2000;
    uint64_t seed = 0x5eed;
    long dumpIndex = -1;
    [[maybe_unused]] long memoryMb = 4096; // not applied under a sanitizer (below)
    long maxMs = 5000;
    std::string dumpFile;
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage(argv[0]);
            return 0;
        }
        if (arg == "--mutations" && i + 1 < argc)
            mutations = std::strtol(argv[++i], nullptr, 10);
        else if (arg == "--seed" && i + 1 < argc)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else if (arg == "--memory-mb" && i + 1 < argc)
            memoryMb = std::strtol(argv[++i], nullptr, 10);
        else if (arg == "--max-ms" && i + 1 < argc)
            maxMs = std::strtol(argv[++i], nullptr, 10);
        else if (arg == "--dump" && i + 2 < argc) {
            dumpIndex = std::strtol(argv[++i], nullptr, 10);
            dumpFile = argv[++i];
        } else if (arg.rfind("-", 0) == 0)
            return usage(argv[0]);
        else
            inputs.emplace_back(arg);
    }
    std::vector<std::string> corpus;
    for (const fs::path &input : inputs) {
        std::error_code ec;
        if (fs::is_directory(input, ec)) {
            std::vector<fs::path> files;
            for (const auto &entry : fs::directory_iterator(input, ec))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
            std::sort(files.begin(), files.end());
            for (const fs::path &file : files)
                corpus.push_back(readAll(file));
        } else if (fs::is_regular_file(input, ec)) {
            corpus.push_back(readAll(input));
        } else {
            std::fprintf(stderr, "%s: no such corpus file or folder\n", input.string().c_str());
            return 2;
        }
    }
    if (corpus.empty()) {
        std::fprintf(stderr, "no corpus inputs: name the committed corpus folder\n");
        return 2;
    }
    installCrashReport();
#ifndef ACCEL_UNDER_SANITIZER
    // A memory bomb fails its allocation (a finding) instead of taking the machine's memory.
    const rlimit limit{rlim_t(memoryMb) << 20, rlim_t(memoryMb) << 20};
    ::setrlimit(RLIMIT_AS, &limit);
#endif
    long slow = 0;
    auto run = [&](const std::string &input, long index) {
        g_current = index;
        const auto start = std::chrono::steady_clock::now();
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(input.data()), input.size());
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
        if (ms > maxMs) {
            ++slow;
            std::fprintf(stderr, "%s %ld took %lld ms (limit %ld): rerun with --dump %ld FILE\n",
                         index < 0 ? "a corpus input" : "mutation", index, static_cast<long long>(ms), maxMs, index);
        }
    };
    for (const std::string &input : corpus)
        run(input, -1);
    Random random{seed * 2 + 1};
    if (dumpIndex >= mutations)
        mutations = dumpIndex + 1;
    for (long m = 0; m < mutations; ++m) {
        std::string bytes = corpus[random.below(corpus.size())];
        mutate(bytes, corpus, random);
        if (m == dumpIndex) {
            std::ofstream(dumpFile, std::ios::binary) << bytes;
            std::printf("mutation %ld written to %s\n", m, dumpFile.c_str());
            return 0;
        }
        run(bytes, m);
    }
    g_current = -1;
    if (slow > 0) {
        std::fprintf(stderr, "%ld inputs took longer than %ld ms\n", slow, maxMs);
        return 1;
    }
    std::printf("%zu corpus inputs and %ld mutations (seed %llu) ran without a failure\n", corpus.size(), mutations,
                static_cast<unsigned long long>(seed));
    return 0;
}
