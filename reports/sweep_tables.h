// Internal to the tolerance sweep (reports/sweep.h): the layouts of its row tables, split from
// sweep.cc, which fills them. One place says which title, description, columns and units a
// table has, so that RunSweep's tables and SweepTableSchemas() (what `merge` checks report.json
// files against) cannot drift apart.
#ifndef FPCONFORM_REPORTS_SWEEP_TABLES_H_
#define FPCONFORM_REPORTS_SWEEP_TABLES_H_

#include "reports/report.h"

namespace fpconform::reports::sweep_internal {

// The row tables' layouts (title, description, columns), without rows.
Table ToleranceTable();
Table CrossTable();
Table PowerTable();
Table QuantizeTable();
Table CompositeTable();
Table CompositePowerTable();
Table CompositeCrossTable();
Table AttentionTable();
Table AttentionPowerTable();
Table AttentionCrossTable();

// The row tables, filled unit by unit (SweepTableSchemas() order).
struct SweepTables {
  Table tol = ToleranceTable(), cross = CrossTable(), power = PowerTable(),
        quant = QuantizeTable(), composite = CompositeTable(), composite_power = CompositePowerTable(),
        composite_cross = CompositeCrossTable(), attention = AttentionTable(),
        attention_power = AttentionPowerTable(), attention_cross = AttentionCrossTable();
};

}  // namespace fpconform::reports::sweep_internal

#endif  // FPCONFORM_REPORTS_SWEEP_TABLES_H_
