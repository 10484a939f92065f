"""The columnar encoding read back into the JSON answer's records, for tests only (the page reads
it with static/js/columns.js): what both decoders must agree with is the JSON answer."""

RECORD_SECTIONS = (("nodes",), ("trace", "sort"), ("trace", "propagate"), ("learner_walk",))


def decoded(answer: dict) -> dict:
    """The parsed columnar answer -> the parsed JSON answer."""
    answer = dict(answer)
    for path in RECORD_SECTIONS:
        holder = answer
        for key in path[:-1]:
            if key not in holder:
                break
            holder[key] = holder = dict(holder[key])
        else:
            if path[-1] in holder:
                section = holder[path[-1]]
                holder[path[-1]] = records(section["count"], section["columns"])
    return answer


def records(count: int, columns: dict) -> list[dict]:
    rows = [{} for _ in range(count)]
    for name, column in columns.items():
        if "table" in column:
            table = column["table"]
            for row, position in zip(rows, column["index"], strict=True):
                row[name] = table[position]
        elif "at" in column:
            for position, value in zip(column["at"], column["values"], strict=True):
                rows[position][name] = value
        elif "columns" in column:
            offsets = column["offsets"]
            inner = records(offsets[-1], column["columns"])
            for i, row in enumerate(rows):
                row[name] = inner[offsets[i] : offsets[i + 1]]
        elif "offsets" in column:
            offsets, values = column["offsets"], column["values"]
            for i, row in enumerate(rows):
                row[name] = values[offsets[i] : offsets[i + 1]]
        else:
            for row, value in zip(rows, column["values"], strict=True):
                row[name] = value
    return rows
