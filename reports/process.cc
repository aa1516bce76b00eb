#include "reports/process.h"

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "base/str_cat.h"

namespace fpconform::reports {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void RecordSignal(int signo) {
  if (g_signal != 0) {
    // Second interrupt: the default action (terminate) now. signal() and raise() are
    // async-signal-safe (POSIX.1-2017, 2.4.3).
    std::signal(signo, SIG_DFL);
    std::raise(signo);
    return;
  }
  g_signal = signo;
}

struct SavedHandlers {
  struct sigaction old_int {}, old_term {};
  bool int_installed = false, term_installed = false;
  int depth = 0;
};
SavedHandlers g_saved;

bool InstallIfNotIgnored(int signo, struct sigaction* old) {
  struct sigaction current {};
  if (sigaction(signo, nullptr, &current) != 0) return false;
  if (current.sa_handler == SIG_IGN) return false;
  struct sigaction sa {};
  sa.sa_handler = RecordSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // No SA_RESTART: sleeps and waits return early with EINTR.
  return sigaction(signo, &sa, old) == 0;
}

void SleepMs(int ms) {
  struct timespec ts {};
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = static_cast<long>(ms % 1000) * 1000000L;
  nanosleep(&ts, nullptr);  // EINTR (a signal): returns early, the caller polls again.
}

// The path execv gets: argv0 itself when it holds a '/', else the first executable
// $PATH/argv0 (an empty PATH entry is the current directory).
bool ResolveProgram(const std::string& argv0, std::string* path) {
  if (argv0.find('/') != std::string::npos) {
    *path = argv0;
    return true;
  }
  const char* env = std::getenv("PATH");
  const std::string dirs = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    // (Built in one expression: GCC 12 warns falsely (-Wrestrict) on assigning "." later.)
    const std::string candidate =
        (end > start ? dirs.substr(start, end - start) : std::string(".")) + "/" + argv0;
    if (access(candidate.c_str(), X_OK) == 0) {
      *path = candidate;
      return true;
    }
    start = end + 1;
  }
  return false;
}

// Waits for pid without blocking signals; -1 with errno on failure, else the wait status.
int WaitBlocking(pid_t pid, int* status) {
  while (true) {
    const pid_t r = waitpid(pid, status, 0);
    if (r == pid) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

}  // namespace

InterruptGuard::InterruptGuard() {
  if (g_saved.depth++ > 0) return;
  g_saved.int_installed = InstallIfNotIgnored(SIGINT, &g_saved.old_int);
  g_saved.term_installed = InstallIfNotIgnored(SIGTERM, &g_saved.old_term);
}

InterruptGuard::~InterruptGuard() {
  if (--g_saved.depth > 0) return;
  if (g_saved.int_installed) sigaction(SIGINT, &g_saved.old_int, nullptr);
  if (g_saved.term_installed) sigaction(SIGTERM, &g_saved.old_term, nullptr);
  g_saved.int_installed = g_saved.term_installed = false;
}

int InterruptGuard::Signal() { return g_signal; }

void InterruptGuard::Reset() { g_signal = 0; }

absl::Status RunProgram(const std::vector<std::string>& argv, const RunProgramOptions& options) {
  if (argv.empty() || argv[0].empty()) {
    return absl::InvalidArgumentError("RunProgram: no program given");
  }
  const std::string& name = argv[0];
  std::string path;
  if (!ResolveProgram(name, &path)) return absl::NotFoundError(Cat(name, ": not found in PATH"));
  // Everything the child needs is prepared before fork(): after it, the child calls only
  // async-signal-safe functions (open, dup2, setpgid, execv, write, _exit).
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    return absl::InternalError(Cat(name, ": cannot create a pipe: ", std::strerror(e)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return absl::InternalError(Cat(name, ": cannot fork: ", std::strerror(e)));
  }
  if (pid == 0) {
    setpgid(0, 0);  // Its own group: a terminal's ^C reaches only us; we stop the whole group.
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      if (options.discard_stdout) dup2(devnull, STDOUT_FILENO);
      if (options.discard_stderr) dup2(devnull, STDERR_FILENO);
      if (devnull > STDERR_FILENO) close(devnull);
    }
    // Signals the parent handles are reset by exec; a mask would be inherited: clear it.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(path.c_str(), cargv.data());
    const int e = errno;
    ssize_t ignored = write(exec_pipe[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // Also from the parent, so the group exists before any kill below.
  close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close(exec_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    WaitBlocking(pid, &status);
    return absl::NotFoundError(Cat(path, ": cannot run: ", std::strerror(exec_errno)));
  }
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      const int e = errno;
      return absl::InternalError(Cat(path, ": cannot wait: ", std::strerror(e)));
    }
    if (options.cancelled && options.cancelled()) {
      kill(-pid, SIGTERM);
      bool done = false;
      for (int waited = 0; waited < options.kill_grace_ms && !done; waited += 10) {
        done = waitpid(pid, &status, WNOHANG) == pid;
        if (!done) SleepMs(10);
      }
      if (!done) {
        kill(-pid, SIGKILL);
        WaitBlocking(pid, &status);
      }
      kill(-pid, SIGKILL);  // Anything the child left running in its group.
      return absl::CancelledError(Cat(path, ": interrupted (the program was stopped)"));
    }
    SleepMs(10);
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 0) return absl::OkStatus();
    return absl::InternalError(Cat(path, ": exited with status ", WEXITSTATUS(status)));
  }
  if (WIFSIGNALED(status)) {
    return absl::InternalError(Cat(path, ": killed by signal ", WTERMSIG(status)));
  }
  return absl::InternalError(Cat(path, ": ended with wait status ", status));
}

}  // namespace fpconform::reports
