"""Every bound on what one program may cost, in one place."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_source_length: int = 100_000  # characters of program text
    max_depth: int = 200  # open parentheses, calls and unary signs at once (Python: nesting of the syntax tree)
    max_nodes: int = 250_000  # Value nodes in the graph the output reaches
    max_check_evaluations: int = 1_000_000  # node re-evaluations the nudge test may do
    max_variant_steps: int = 200_000  # steps a deliberately broken walk may take
    # Python programs only:
    max_statements: int = 1_000_000  # statements executed (each loop iteration and comprehension item counts)
    max_call_depth: int = 4_000  # calls of the program's own functions open at once (recursion included)
    max_collection_length: int = 100_000  # items in one list, tuple or dict, or consumed by one sum/min/max/list
    max_backward_calls: int = 10_000  # calls of backward()
    max_printed_characters: int = 100_000  # characters print() may write in all
    max_text_length: int = 1_000_000  # characters of one string a program builds (a file's text, a join)
    max_fstring_fields: int = 1_000  # {fields} of one f-string in the program (3.11 parses them in quadratic time)
    max_files_bytes: int = 500_000  # UTF-8 bytes of the files given with a program (names and texts)
    # Graphs posted whole:
    max_label_length: int = 200  # characters of one node's label

    def __post_init__(self):
        for name, value in self.__dict__.items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"limit {name} must be a positive integer, not {value!r}")
