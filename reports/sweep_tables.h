// Internal to the tolerance sweep (reports/sweep.h): the layouts of its row tables, split from
// sweep.cc, which fills them. One place says which columns, units and descriptions a table has,
// so that RunSweep's tables and SweepTableSchemas() (what `merge` checks report.json files
// against) cannot drift apart.
#ifndef FPCONFORM_REPORTS_SWEEP_TABLES_H_
#define FPCONFORM_REPORTS_SWEEP_TABLES_H_

#include "reports/report.h"

namespace fpconform::reports::sweep_internal {

// The row tables' layouts, without descriptions (DescribeTables adds them).
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

// Sets each row table's description (report.json "description", report.md's text).
void DescribeTables(SweepTables& tables);

}  // namespace fpconform::reports::sweep_internal

#endif  // FPCONFORM_REPORTS_SWEEP_TABLES_H_
