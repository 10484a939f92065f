// The columnar encoding of /backward's answer (docs/api.md, "The columnar encoding"), read back
// into the records of the JSON answer: decodeColumns(columnar) deep-equals the JSON answer of the
// same request. Pure data: no DOM, no fetch. Non-finite numbers stay the strings "NaN",
// "Infinity" and "-Infinity" here, as in the JSON answer (api.js revives them).

export const COLUMNS_MEDIA_TYPE = "application/vnd.valuegraph.columns+json";

/** The sections of the answer that are records in JSON, and {count, columns} in the encoding. */
const RECORD_SECTIONS = [["nodes"], ["trace", "sort"], ["trace", "propagate"]];

/** count records from their columns; each column's shape says how it was written. */
export function recordsOf(count, columns) {
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

/** The columnar answer (parsed) -> the object the JSON answer parses to. The argument is not changed. */
export function decodeColumns(columnar) {
  const answer = { ...columnar };
  for (const path of RECORD_SECTIONS) {
    let holder = answer;
    for (const key of path.slice(0, -1)) {
      if (!(key in holder)) {
        holder = null;
        break;
      }
      holder = holder[key] = { ...holder[key] };
    }
    const last = path[path.length - 1];
    if (holder && last in holder) holder[last] = recordsOf(holder[last].count, holder[last].columns);
  }
  return answer;
}
