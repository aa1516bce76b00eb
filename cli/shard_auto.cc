#include "cli/shard_auto.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>

#include "base/str_cat.h"

namespace fpconform::cli {
namespace {

// A decimal integer in [lo, hi], the whole string; false on anything else (and on nullptr).
bool ParseInt(const char* text, long long lo, long long hi, long long& v) {
  if (text == nullptr) return false;
  const std::string s(text);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size() && v >= lo && v <= hi;
}

constexpr long long kMaxIndex = 1LL << 30;

absl::Status Bad(const std::string& name, const char* value, const std::string& expected) {
  return absl::InvalidArgumentError(
      Cat("--shard auto: ", name, "='", value == nullptr ? "" : value, "' is not ", expected));
}

absl::StatusOr<AutoShard> FromSlurm(const std::function<const char*(const char*)>& getenv) {
  const char* id_s = getenv("SLURM_ARRAY_TASK_ID");
  const char* min_s = getenv("SLURM_ARRAY_TASK_MIN");
  const char* count_s = getenv("SLURM_ARRAY_TASK_COUNT");
  const char* step_s = getenv("SLURM_ARRAY_TASK_STEP");
  const char* max_s = getenv("SLURM_ARRAY_TASK_MAX");
  long long id = 0, min = 0, count = 0, step = 1, max = 0;
  if (!ParseInt(id_s, 0, kMaxIndex, id)) return Bad("SLURM_ARRAY_TASK_ID", id_s, "an array index");
  if (min_s == nullptr || count_s == nullptr) {
    return absl::InvalidArgumentError(
        "--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_MIN or "
        "SLURM_ARRAY_TASK_COUNT is not (a job array started by sbatch --array sets all three)");
  }
  if (!ParseInt(min_s, 0, kMaxIndex, min))
    return Bad("SLURM_ARRAY_TASK_MIN", min_s, "an array index");
  if (!ParseInt(count_s, 1, kMaxIndex, count)) {
    return Bad("SLURM_ARRAY_TASK_COUNT", count_s, "a task count >= 1");
  }
  if (step_s != nullptr && !ParseInt(step_s, 1, kMaxIndex, step)) {
    return Bad("SLURM_ARRAY_TASK_STEP", step_s, "a step >= 1");
  }
  if (max_s != nullptr) {
    if (!ParseInt(max_s, 0, kMaxIndex, max))
      return Bad("SLURM_ARRAY_TASK_MAX", max_s, "an array index");
    if (min + (count - 1) * step != max) {
      return absl::InvalidArgumentError(Cat("--shard auto: the Slurm array is not one range (MIN ",
                                            min, ", MAX ", max, ", STEP ", step, ", COUNT ", count,
                                            "): submit it as --array=0-", count - 1, " (or 1-",
                                            count, ") so that every task has a shard"));
    }
  }
  if (id < min || (id - min) % step != 0 || (id - min) / step >= count) {
    return absl::InvalidArgumentError(Cat("--shard auto: SLURM_ARRAY_TASK_ID ", id,
                                          " is not in the array (MIN ", min, ", STEP ", step,
                                          ", COUNT ", count, ")"));
  }
  AutoShard s;
  s.index = static_cast<int>((id - min) / step + 1);
  s.count = static_cast<int>(count);
  s.source =
      Cat("SLURM_ARRAY_TASK_ID=", id, " (MIN ", min, ", STEP ", step, ", COUNT ", count, ")");
  return s;
}

absl::StatusOr<AutoShard> FromKubernetes(const std::function<const char*(const char*)>& getenv) {
  const char* index_s = getenv("JOB_COMPLETION_INDEX");
  const char* count_s = getenv("FPCONFORM_SHARD_COUNT");
  long long index = 0, count = 0;
  if (!ParseInt(index_s, 0, kMaxIndex, index)) {
    return Bad("JOB_COMPLETION_INDEX", index_s, "a completion index");
  }
  if (count_s == nullptr || *count_s == '\0') {
    return absl::InvalidArgumentError(
        "--shard auto: JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but "
        "FPCONFORM_SHARD_COUNT is not: Kubernetes does not export the completion count; set "
        "FPCONFORM_SHARD_COUNT to the Job's spec.completions in the container's env");
  }
  if (!ParseInt(count_s, 1, kMaxIndex, count)) {
    return Bad("FPCONFORM_SHARD_COUNT", count_s, "a shard count >= 1");
  }
  if (index >= count) {
    return absl::InvalidArgumentError(Cat("--shard auto: JOB_COMPLETION_INDEX ", index,
                                          " is not below FPCONFORM_SHARD_COUNT ", count,
                                          " (set it to spec.completions)"));
  }
  AutoShard s;
  s.index = static_cast<int>(index + 1);
  s.count = static_cast<int>(count);
  s.source = Cat("JOB_COMPLETION_INDEX=", index, ", FPCONFORM_SHARD_COUNT=", count);
  return s;
}

}  // namespace

absl::StatusOr<AutoShard> AutoShardFromEnvironment(
    const std::function<const char*(const char*)>& getenv) {
  const bool slurm = getenv("SLURM_ARRAY_TASK_ID") != nullptr;
  const bool kubernetes = getenv("JOB_COMPLETION_INDEX") != nullptr;
  if (slurm && kubernetes) {
    return absl::InvalidArgumentError(
        "--shard auto: both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set: give the "
        "shard as --shard i/n");
  }
  if (slurm) return FromSlurm(getenv);
  if (kubernetes) return FromKubernetes(getenv);
  return absl::InvalidArgumentError(
      "--shard auto: no job-array index in the environment: expected SLURM_ARRAY_TASK_ID (a "
      "Slurm job array, sbatch --array) or JOB_COMPLETION_INDEX with FPCONFORM_SHARD_COUNT (a "
      "Kubernetes Indexed Job); elsewhere give --shard i/n");
}

CLI::Validator ShardAutoTransform(std::string command) {
  return CLI::Validator(
      [command](std::string& value) -> std::string {
        if (value != "auto") return "";
        absl::StatusOr<AutoShard> s =
            AutoShardFromEnvironment([](const char* name) { return std::getenv(name); });
        if (!s.ok()) {  // CLI11 prefixes "--shard: ".
          std::string message(s.status().message());
          const std::string prefix = "--shard auto: ";
          if (message.rfind(prefix, 0) == 0) message = "auto: " + message.substr(prefix.size());
          return message;
        }
        value = Cat(s->index, "/", s->count);
        std::fprintf(stderr, "fpconform %s: --shard auto: shard %s from %s\n", command.c_str(),
                     value.c_str(), s->source.c_str());
        return "";
      },
      "i/n|auto");
}

}  // namespace fpconform::cli
