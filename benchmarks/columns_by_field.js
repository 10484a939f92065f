// The peer of static/js/columns.js's decodeColumns in benchmarks/bench_columns.py: the page's decoder
// before it named the records' fields, which reads any columns generically and grows every record a
// field at a time (one pass over the records per column); the trace, which has no columns, it takes as the
// page replays it. Not used by the page.

import { decodeTrace } from "/static/js/columns.js";

/** count records from their columns; each column's shape says how it was written. */
function recordsOf(count, columns) {
  const rows = Array.from({ length: count }, () => ({}));
  for (const [name, column] of Object.entries(columns)) {
    if ("table" in column) {
      // one of each distinct value (a span, expr, scope, op or action), and per record its position
      const { table, index } = column;
      for (let i = 0; i < count; i++) rows[i][name] = table[index[i]];
    } else if ("at" in column) {
      // a field only some records have: the positions that have it
      const { at, values } = column;
      for (let k = 0; k < at.length; k++) rows[at[k]][name] = values[k];
    } else if ("columns" in column) {
      // a list of records per record: offsets into the records of the inner columns
      const { offsets } = column;
      const inner = recordsOf(offsets[offsets.length - 1], column.columns);
      for (let i = 0; i < count; i++) rows[i][name] = inner.slice(offsets[i], offsets[i + 1]);
    } else if ("offsets" in column) {
      // a list per record (CSR): offsets into one flat array
      const { offsets, values } = column;
      for (let i = 0; i < count; i++) rows[i][name] = values.slice(offsets[i], offsets[i + 1]);
    } else {
      const { values } = column;
      for (let i = 0; i < count; i++) rows[i][name] = values[i];
    }
  }
  return rows;
}

/** The columnar answer (parsed) -> the object the JSON answer parses to (its records' keys in column order). */
export function decodeColumnsByField(columnar) {
  const answer = { ...columnar, nodes: recordsOf(columnar.nodes.count, columnar.nodes.columns) };
  if (columnar.trace) answer.trace = decodeTrace(columnar); // no columns: the steps are replayed, as the page replays them
  return answer;
}
