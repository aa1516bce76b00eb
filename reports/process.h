// Child programs and interruption, for the commands that write report directories (tolerance,
// merge, audit): run a helper program (e.g. the report.html renderer) without a shell and without
// blocking SIGINT/SIGTERM the way std::system does, and notice SIGINT/SIGTERM without doing
// anything unsafe in a signal handler.
//
// RunProgram(argv, options):
//   forks, execs argv[0] with argv (argv[0] without a '/' is looked up in $PATH, as execvp does,
//   but before the fork) in its own process group, stdin from /dev/null, stdout/stderr inherited
//   or discarded, and waits for it. While it runs, options.cancelled (when set) is polled every
//   10 ms; once it returns true the child's process group gets SIGTERM, then SIGKILL after
//   options.kill_grace_ms, the child is reaped and RunProgram returns CancelledError.
//   Returns OK when the program exits with status 0. Errors name argv[0]:
//     NotFound          "python3: not found in PATH" / "/x/y: cannot run: No such file or directory"
//     Internal          "/usr/bin/python3: exited with status 1" / "...: killed by signal 9"
//     Cancelled         "/usr/bin/python3: interrupted (the program was stopped)"
//     InvalidArgument   an empty argv
//   Other threads may be running: between fork and exec the child calls only
//   async-signal-safe functions (everything it needs is prepared before the fork).
//
// InterruptGuard: while one is alive, SIGINT and SIGTERM only record the signal (the handler
// stores the signal number in a volatile sig_atomic_t, nothing else: async-signal-safe); a
// second signal after the first ends the process at once (default action), so a stuck run can
// still be stopped. Signals that were ignored when the guard was made (e.g. SIGINT of a
// background job in a non-interactive shell) stay ignored. The destructor restores the previous
// handlers. The command then stops its work, removes what it staged and exits with
// 128 + InterruptGuard::Signal() (130 for SIGINT, 143 for SIGTERM).
//
// Example:
//   InterruptGuard guard;
//   RunProgramOptions o;
//   o.cancelled = [] { return InterruptGuard::Interrupted(); };
//   absl::Status s = RunProgram({"python3", "plot_report.py", "r/report.json", "r/report.html"}, o);
//   if (InterruptGuard::Interrupted()) return 128 + InterruptGuard::Signal();
#ifndef FPCONFORM_REPORTS_PROCESS_H_
#define FPCONFORM_REPORTS_PROCESS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace fpconform::reports {

struct RunProgramOptions {
  bool discard_stdout = false;  // Child's stdout to /dev/null (else inherited).
  bool discard_stderr = false;  // Child's stderr to /dev/null (else inherited).
  // Polled while the child runs; true stops it (see the file comment). Null: never.
  std::function<bool()> cancelled;
  int kill_grace_ms = 2000;  // SIGTERM -> SIGKILL delay once cancelled.
};

absl::Status RunProgram(const std::vector<std::string>& argv,
                        const RunProgramOptions& options = {});

class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The first SIGINT/SIGTERM received while a guard was alive, or 0.
  static int Signal();
  static bool Interrupted() { return Signal() != 0; }
  // Forgets a recorded signal (tests).
  static void Reset();
};

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_PROCESS_H_
