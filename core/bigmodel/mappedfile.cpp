#include "core/bigmodel/mappedfile.h"

#include "core/common/fileutil.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace accel::bigmodel {

namespace {

// The live mappings, read by the SIGBUS handler: fixed storage and atomics only (async-signal-safe).
struct GuardSlot {
    std::atomic<const char *> path{nullptr}; // claims the slot; the MappedFile owns the string
    std::atomic<std::uintptr_t> begin{0};
    std::atomic<std::uintptr_t> end{0};
};
constexpr int kGuardSlots = 4096; // mappings guarded at once; more stay unguarded (a crash as before)
GuardSlot g_guardSlots[kGuardSlots];
struct sigaction g_previousBusAction {};

void writeAll(const char *text)
{
    size_t length = 0;
    while (text[length] != '\0')
        ++length;
    while (length > 0) {
        const ssize_t written = ::write(STDERR_FILENO, text, length);
        if (written <= 0)
            return;
        text += written;
        length -= static_cast<size_t>(written);
    }
}

void onBusError(int signal, siginfo_t *info, void *context)
{
    const auto address = reinterpret_cast<std::uintptr_t>(info ? info->si_addr : nullptr);
    for (GuardSlot &slot : g_guardSlots) {
        const char *path = slot.path.load(std::memory_order_acquire);
        if (path && address >= slot.begin.load() && address < slot.end.load()) {
            writeAll("error: ");
            writeAll(path);
            writeAll(": the file shrank while mapped (another process truncated or rewrote it); its "
                     "bytes can no longer be read\n");
            ::_exit(1);
        }
    }
    // Not a mapped file of ours: what was there before.
    if ((g_previousBusAction.sa_flags & SA_SIGINFO) && g_previousBusAction.sa_sigaction) {
        g_previousBusAction.sa_sigaction(signal, info, context);
    } else if (g_previousBusAction.sa_handler != SIG_DFL && g_previousBusAction.sa_handler != SIG_IGN) {
        g_previousBusAction.sa_handler(signal);
    } else {
        ::signal(SIGBUS, SIG_DFL); // the faulting instruction runs again and the default ends the process
    }
}

int guard(const std::string &path, const std::byte *data, uint64_t size)
{
    static std::once_flag installed;
    std::call_once(installed, [] {
        struct sigaction action {};
        action.sa_sigaction = onBusError;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGBUS, &action, &g_previousBusAction);
    });
    for (int i = 0; i < kGuardSlots; ++i) {
        const char *expected = nullptr;
        GuardSlot &slot = g_guardSlots[i];
        if (!slot.path.compare_exchange_strong(expected, "")) // claimed, not yet matched
            continue;
        slot.begin.store(reinterpret_cast<std::uintptr_t>(data));
        slot.end.store(reinterpret_cast<std::uintptr_t>(data) + size);
        slot.path.store(path.c_str(), std::memory_order_release);
        return i;
    }
    return -1;
}

void unguard(int index)
{
    if (index < 0)
        return;
    GuardSlot &slot = g_guardSlots[index];
    slot.end.store(0);
    slot.begin.store(0);
    slot.path.store(nullptr, std::memory_order_release);
}

} // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::open(const std::string &path)
{
    auto opened = fileutil::openRegularFile(path); // never blocks on a FIFO
    if (!opened)
        return tl::unexpected(opened.error());
    const int fd = *opened;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int saved = errno;
        ::close(fd);
        return makeError(ErrorCode::Io, std::string("cannot stat: ") + std::strerror(saved), path);
    }
    std::shared_ptr<MappedFile> file(new MappedFile());
    file->m_path = path;
    file->m_size = static_cast<uint64_t>(st.st_size);
    if (file->m_size > 0) {
        void *address = ::mmap(nullptr, file->m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (address == MAP_FAILED) {
            const int saved = errno;
            ::close(fd);
            return makeError(ErrorCode::Io, std::string("cannot map: ") + std::strerror(saved), path);
        }
        file->m_data = static_cast<const std::byte *>(address);
        file->m_guardSlot = guard(file->m_path, file->m_data, file->m_size);
    }
    ::close(fd);
    return std::shared_ptr<const MappedFile>(std::move(file));
}

MappedFile::~MappedFile()
{
    unguard(m_guardSlot);
    if (m_data)
        ::munmap(const_cast<std::byte *>(m_data), m_size);
}

void MappedFile::adviseSequential() const
{
    if (m_data) {
        ::madvise(const_cast<std::byte *>(m_data), m_size, MADV_SEQUENTIAL);
        ::madvise(const_cast<std::byte *>(m_data), m_size, MADV_WILLNEED);
    }
}

void MappedFile::populate(const std::byte *from, uint64_t bytes) const
{
#ifdef MADV_POPULATE_READ
    if (!m_data || bytes == 0 || from < m_data || from + bytes > m_data + m_size)
        return;
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(from) / page * page;
    const uintptr_t end = reinterpret_cast<uintptr_t>(from) + bytes;
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_POPULATE_READ); // advisory: errors ignored
#else
    (void)from;
    (void)bytes;
#endif
}

} // namespace accel::bigmodel
