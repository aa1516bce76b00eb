// `--shard auto`: the shard i/n of a job-array task, read from the environment of the engine
// that runs it, so that one job script serves every task (README.md, "Sharding on Slurm and
// Kubernetes"). fpconform schedules nothing itself.
//
//   Slurm job array (sbatch --array=A-B[:S]): SLURM_ARRAY_TASK_ID is the task's array index as
//     given to --array (0- or 1-based, whatever the user wrote), SLURM_ARRAY_TASK_MIN the lowest
//     index, SLURM_ARRAY_TASK_STEP the step, SLURM_ARRAY_TASK_COUNT the number of tasks
//     (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES"; https://slurm.schedmd.com/job_array.html).
//     i = (ID - MIN) / STEP + 1 (STEP 1 when unset), n = COUNT. An index list that is not one
//     range (--array=1,2,9) is refused: MIN + (COUNT - 1) * STEP must be SLURM_ARRAY_TASK_MAX.
//   Kubernetes Indexed Job (completionMode: Indexed): the control plane sets
//     JOB_COMPLETION_INDEX to the pod's index, 0 .. spec.completions - 1
//     (https://kubernetes.io/docs/tasks/job/indexed-parallel-processing-static/, JobSpec
//     completionMode). Kubernetes does not export the completion count, so the manifest sets
//     FPCONFORM_SHARD_COUNT to spec.completions. i = JOB_COMPLETION_INDEX + 1,
//     n = FPCONFORM_SHARD_COUNT.
//
// Errors (InvalidArgument, naming the variables): neither engine's variable set, both set, a
// value that is not a decimal integer, an index outside 0 .. count - 1, a missing count.
#ifndef FPCONFORM_CLI_SHARD_AUTO_H_
#define FPCONFORM_CLI_SHARD_AUTO_H_

#include <functional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"

namespace fpconform::cli {

struct AutoShard {
  int index = 0;  // 1-based, as --shard i/n.
  int count = 0;
  std::string source;  // "SLURM_ARRAY_TASK_ID=4 (MIN 1, STEP 1, COUNT 8)", for the log.
};

// `getenv`: the environment lookup (std::getenv; tests pass their own).
absl::StatusOr<AutoShard> AutoShardFromEnvironment(
    const std::function<const char*(const char*)>& getenv);

// For CLI11: --shard auto becomes "i/n" from the process environment (and says so on stderr,
// prefixed "fpconform <command>: "); any other value passes unchanged.
CLI::Validator ShardAutoTransform(std::string command);

}  // namespace fpconform::cli

#endif  // FPCONFORM_CLI_SHARD_AUTO_H_
