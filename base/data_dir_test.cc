// base/data_dir.h: the layout table against the real source tree, and each lookup's order on
// layouts built under a fresh temporary directory.
#include "base/data_dir.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "base/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace fpconform {
namespace {

namespace fs = std::filesystem;

std::string Normal(const fs::path& p) { return p.lexically_normal().string(); }

class DataDirTest : public ::testing::Test {
 protected:
  // Makes dir_/rel as a directory, or as a file when it ends in .toml or .py.
  std::string Make(const std::string& rel) const {
    const fs::path p = dir_ / rel;
    if (p.extension() == ".toml" || p.extension() == ".py") {
      fs::create_directories(p.parent_path());
      std::ofstream(p) << "x";
    } else {
      fs::create_directories(p);
    }
    return p.string();
  }
  TempDir tmp_{"fpconform_data_dir_test"};
  fs::path dir_{tmp_.path()};
};

// Sets an environment variable for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DataLayoutTest, EveryItemLiesWhereTheTableSaysInThisSourceTree) {
  std::set<std::string_view> names, envs;
  for (DataItem item : kDataItems) {
    const DataLayout& l = LayoutOf(item);
    SCOPED_TRACE(std::string(l.installed_name));
    EXPECT_EQ(DataItemNamed(l.installed_name), item);
    EXPECT_TRUE(names.insert(l.installed_name).second);
    if (!l.env.empty()) {
      EXPECT_TRUE(envs.insert(l.env).second);
    }
    EXPECT_EQ(SourceDataPath(item), std::string(FPCONFORM_TEST_SOURCE_ROOT) + "/" + std::string(l.source_path));
    EXPECT_TRUE(fs::exists(SourceDataPath(item))) << SourceDataPath(item);
  }
  EXPECT_EQ(LayoutOf(DataItem::kModels).env, "FPCONFORM_MODELS_DIR");
  EXPECT_EQ(LayoutOf(DataItem::kStandardSweep).env, "FPCONFORM_SWEEP_FILE");
  EXPECT_TRUE(LayoutOf(DataItem::kPlotReport).env.empty());
  EXPECT_FALSE(DataItemNamed("model").has_value());
  EXPECT_FALSE(DataItemNamed("").has_value());
  EXPECT_TRUE(fs::is_directory(SourceDataPath(DataItem::kAttentionModels)));
  EXPECT_TRUE(fs::is_regular_file(SourceDataPath(DataItem::kPlotReport)));
}

TEST_F(DataDirTest, DefaultIsTheInstalledCopyWheneverThereIsAnInstall) {
  EXPECT_EQ(DefaultDataPath(DataItem::kModels, ""), SourceDataPath(DataItem::kModels));
  const std::string installed = Make("share/fpconform");
  const std::string models = Make("share/fpconform/models");
  EXPECT_EQ(DefaultDataPath(DataItem::kModels, installed), models);
  const std::string sweep = Make("share/fpconform/standard_sweep.toml");
  EXPECT_EQ(DefaultDataPath(DataItem::kStandardSweep, installed), sweep);
  // An item the install lacks is still looked for there (its reader then names the installed
  // path), never in the build machine's source tree.
  for (DataItem item : {DataItem::kCompositeModels, DataItem::kAttentionModels, DataItem::kPlotReport}) {
    EXPECT_EQ(DefaultDataPath(item, installed), installed + "/" + std::string(LayoutOf(item).installed_name));
  }
}

TEST_F(DataDirTest, ResolveTakesTheGivenPathThenTheVariableThenTheDefault) {
  const std::string installed = Make("inst");
  const std::string models = Make("inst/models");
  {
    ScopedEnv env("FPCONFORM_MODELS_DIR", nullptr);
    EXPECT_EQ(ResolveDataPath(DataItem::kModels, "", installed), models);
    EXPECT_EQ(ResolveDataPath(DataItem::kModels, "", ""), SourceDataPath(DataItem::kModels));
    EXPECT_EQ(ResolveDataPath(DataItem::kModels, "flag/dir", installed), "flag/dir");
  }
  {
    ScopedEnv env("FPCONFORM_MODELS_DIR", "/from/env");
    EXPECT_EQ(ResolveDataPath(DataItem::kModels, "", installed), "/from/env");
    EXPECT_EQ(ResolveDataPath(DataItem::kModels, "flag/dir", installed), "flag/dir");
    // Another item's variable does not leak into this one.
    ScopedEnv composite("FPCONFORM_COMPOSITE_MODELS_DIR", nullptr);
    EXPECT_EQ(ResolveDataPath(DataItem::kCompositeModels, "", ""), SourceDataPath(DataItem::kCompositeModels));
  }
  {
    ScopedEnv env("FPCONFORM_MODELS_DIR", "");  // Set but empty: as if unset.
    EXPECT_EQ(ResolveDataPath(DataItem::kModels, "", installed), models);
  }
  {
    ScopedEnv env("FPCONFORM_SWEEP_FILE", "/my/sweep.toml");
    EXPECT_EQ(ResolveDataPath(DataItem::kStandardSweep, "", installed), "/my/sweep.toml");
  }
  {
    ScopedEnv env("FPCONFORM_ATTENTION_MODELS_DIR", "/att");
    EXPECT_EQ(ResolveDataPath(DataItem::kAttentionModels, "", ""), "/att");
  }
}

TEST_F(DataDirTest, ExecutableDataDirIsFoundRelativeToTheRunningBinary) {
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const std::string installed = Make("share/fpconform");
  const std::string rel = fs::relative(installed, exe.parent_path()).string();
  ASSERT_FALSE(rel.empty());
  EXPECT_EQ(ExecutableDataDir(rel), "");  // No models/ there yet.
  Make("share/fpconform/models");
  const std::string found = ExecutableDataDir(rel);
  ASSERT_FALSE(found.empty());
  EXPECT_TRUE(fs::equivalent(found, installed)) << found;
  EXPECT_EQ(ExecutableDataDir("no/such/dir"), "");
}

TEST_F(DataDirTest, BesideFindsTheSiblingInEitherLayout) {
  // The source tree's layout.
  const std::string attention = Make("src/composite/attention_models");
  const std::string models = Make("src/accumulation/models");
  EXPECT_EQ(DataPathBeside(attention, DataItem::kAttentionModels, DataItem::kModels), Normal(models));
  EXPECT_EQ(DataPathBeside(attention + "/", DataItem::kAttentionModels, DataItem::kModels), Normal(models));
  const std::string sweep = Make("src/reports/standard_sweep.toml");
  EXPECT_EQ(DataPathBeside(models, DataItem::kModels, DataItem::kStandardSweep), Normal(sweep));
  // The installed layout (share/fpconform/, the wheel's data/): siblings by installed name, the
  // same answer whether or not the sibling is there yet.
  const std::string inst_attention = Make("share/fpconform/attention-models");
  const std::string inst_models = (dir_ / "share/fpconform/models").string();
  EXPECT_EQ(DataPathBeside(inst_attention, DataItem::kAttentionModels, DataItem::kModels), Normal(inst_models));
  Make("share/fpconform/models");
  EXPECT_EQ(DataPathBeside(inst_attention, DataItem::kAttentionModels, DataItem::kModels), Normal(inst_models));
  // This source tree itself.
  EXPECT_EQ(DataPathBeside(SourceDataPath(DataItem::kAttentionModels), DataItem::kAttentionModels, DataItem::kModels),
            Normal(SourceDataPath(DataItem::kModels)));
}

}  // namespace
}  // namespace fpconform
