"""Settings: every bound the server enforces, in one object read once from the environment.

| variable                           | default   | what it bounds                                                      |
|------------------------------------|-----------|---------------------------------------------------------------------|
| VALUEGRAPH_MAX_BODY_BYTES          | 1000000   | bytes of one request body (larger: 413)                             |
| VALUEGRAPH_MAX_GRAPH_BODY_BYTES    | 20000000  | bytes of a body with a `graph` (POST /backward), of POST /layout's  |
| VALUEGRAPH_MAX_SOURCE_LENGTH       | 100000    | characters of program text                                          |
| VALUEGRAPH_MAX_DEPTH               | 200       | parentheses, calls and unary signs open at once (Python: nesting)   |
| VALUEGRAPH_MAX_NODES               | 250000    | nodes in the graph the output reaches                               |
| VALUEGRAPH_MAX_CHECK_EVALUATIONS   | 1000000   | node re-evaluations the nudge test (check=true) may do              |
| VALUEGRAPH_MAX_VARIANT_STEPS       | 200000    | steps a deliberately broken walk (variant) may take                 |
| VALUEGRAPH_MAX_STATEMENTS          | 1000000   | statements a Python program may execute                             |
| VALUEGRAPH_MAX_CALL_DEPTH          | 4000      | calls of a Python program's own functions open at once              |
| VALUEGRAPH_MAX_COLLECTION_LENGTH   | 100000    | items in one list, tuple or dict of a Python program                |
| VALUEGRAPH_MAX_BACKWARD_CALLS      | 10000     | backward() calls of a Python program                                |
| VALUEGRAPH_MAX_PRINTED_CHARACTERS  | 100000    | characters a Python program may print                               |
| VALUEGRAPH_MAX_TEXT_LENGTH         | 1000000   | characters of one string a Python program builds                    |
| VALUEGRAPH_MAX_FSTRING_FIELDS      | 1000      | {fields} of one f-string written in a Python program                |
| VALUEGRAPH_MAX_FILES_BYTES         | 500000    | UTF-8 bytes of the files given with a program (`files`)             |
| VALUEGRAPH_MAX_LABEL_LENGTH        | 200       | characters of one node's label in a posted graph                    |
| VALUEGRAPH_TIME_BUDGET             | 2.0       | seconds of wall-clock time per request (longer: 503)                |
| VALUEGRAPH_BROWSER_RUN_SECONDS     | 5.0       | seconds a TypeScript/JavaScript program runs in the browser (page)  |
| VALUEGRAPH_WORKER_THREADS          | 4         | requests computed at once per process; the rest queue               |
| VALUEGRAPH_RESPONSE_CACHE_BYTES    | 16000000  | bytes of answers kept in the in-process LRU cache (0: no cache)     |
| VALUEGRAPH_RETRY_AFTER             | 2         | seconds a 503 asks the client to wait (Retry-After)                 |
| VALUEGRAPH_MAX_REPORTED_ERRORS     | 20        | problems listed in one 422 (the rest are counted)                   |
| VALUEGRAPH_MAX_ECHO_LENGTH         | 100       | characters of a rejected input echoed back in a 422                 |
| VALUEGRAPH_MAX_DISCARD_BYTES       | 10000000  | a too-large body declaring up to this is read whole after its 413   |
| VALUEGRAPH_LINGER_SECONDS          | 30.0      | seconds a larger or chunked one is still read after its 413         |
| VALUEGRAPH_MAX_LINGER_BYTES        | 256000000 | bytes of it read and dropped then; past either, the connection ends |
| VALUEGRAPH_TIMEOUT_KEEP_ALIVE      | 5.0       | seconds an idle keep-alive connection stays open                    |
| VALUEGRAPH_TIMEOUT_HEADERS         | 10.0      | seconds from connecting (or the last answer) to complete headers    |
| VALUEGRAPH_TIMEOUT_BODY            | 30.0      | seconds from the headers to the end of the request's body           |
| VALUEGRAPH_MAX_CONNECTIONS         | 1000      | open connections per process; more are closed at once               |
| VALUEGRAPH_PUBLIC_URL              | (unset)   | this site's origin (https://host) in every absolute URL it gives    |
| VALUEGRAPH_ALLOWED_HOSTS           | (unset)   | Host names trusted for absolute URLs when PUBLIC_URL is unset       |
| VALUEGRAPH_TRUSTED_PROXIES         | (unset)   | proxy addresses whose X-Forwarded-* `valuegraph serve` believes     |
| VALUEGRAPH_REDIS_URL               | (unset)   | Teach live rooms in Redis (shared by every worker/instance)         |
| VALUEGRAPH_REDIS_TIMEOUT           | 2.0       | seconds to connect to Redis or to wait for one of its answers       |
| VALUEGRAPH_REDIS_RETRY_SECONDS     | 2.0       | seconds Redis is left alone after a failure (meanwhile: 503 / 1013) |
| VALUEGRAPH_ROOM_IDLE_SECONDS       | 3600      | seconds a room lives without a move by its teacher                  |
| VALUEGRAPH_ROOM_MAX_ROOMS          | 1000      | rooms open at once (more: 503)                                      |
| VALUEGRAPH_ROOM_CREATIONS_PER_HOUR | 30        | rooms one client address may make in an hour (more: 429)            |
| VALUEGRAPH_ROOM_MAX_MEMBERS        | 500       | students in a room: the default and the most a teacher may choose   |
| VALUEGRAPH_ROOM_WRONG_CODES_PER_MINUTE | 20  | distinct codes of no room one address may try a minute (more: 4429) |
| VALUEGRAPH_ROOM_MAX_MESSAGE_BYTES  | 200000    | bytes of one WebSocket message (larger: closed, 1009)               |
| VALUEGRAPH_ROOM_MESSAGES_PER_SECOND| 30        | messages a connection may send per second, on average               |
| VALUEGRAPH_ROOM_MESSAGE_BURST      | 60        | messages it may send at once before the rate applies                |
| VALUEGRAPH_ROOM_JOIN_SECONDS       | 10        | seconds a new connection has to send its join message               |
| VALUEGRAPH_ROOM_SEND_QUEUE         | 256       | messages queued for a slow member (more: dropped, it reconnects)    |
| VALUEGRAPH_JOB_WORKERS             | 2         | job worker processes running at once; more jobs wait, `queued`      |
| VALUEGRAPH_JOB_MAX_JOBS            | 20        | jobs queued or running at once, in all (more: 429)                  |
| VALUEGRAPH_JOB_MAX_PER_CLIENT      | 2         | jobs queued or running at once for one client address (more: 429)   |
| VALUEGRAPH_JOB_CPU_SECONDS         | 7200      | seconds of CPU time one job's process may use (RLIMIT_CPU)          |
| VALUEGRAPH_JOB_MEMORY_BYTES        | 2000000000| bytes of address space one job's process may hold (RLIMIT_AS)       |
| VALUEGRAPH_JOB_MAX_STATEMENTS      | 2000000000| statements a job's program may execute (instead of MAX_STATEMENTS)  |
| VALUEGRAPH_JOB_MAX_COLLECTION_LENGTH | 1000000 |items in a job's list, set or dict (instead of MAX_COLLECTION_LENGTH)|
| VALUEGRAPH_JOB_WALL_SECONDS        | 14400     | seconds of wall-clock time one job may run                          |
| VALUEGRAPH_JOB_EXPIRE_SECONDS      | 3600      | seconds a finished job's status is kept (later: 404)                |
| VALUEGRAPH_JOB_WORKER_TIMEOUT      | 10.0      | seconds a Redis job's worker may go unheard before the job fails    |
| VALUEGRAPH_JOB_SNAPSHOT_EVERY      | 2         | backward() calls between a job's snapshots (0: none; graphs replay) |
| VALUEGRAPH_JOB_SNAPSHOT_BYTES      | 200000000 | bytes of snapshots one job keeps (past it: every other is dropped)  |

Program-level limits (source length to printed characters) answer 400 with the place in the program.
The time budget covers the whole request: reading the body, validation, the work and the answer.
The TIMEOUT_* and MAX_CONNECTIONS settings bound connections; `valuegraph serve` applies them (its
options override them).
"""

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property

from engine import Limits

PREFIX = "VALUEGRAPH_"
MAY_BE_ZERO = {"response_cache_bytes", "job_snapshot_every"}  # 0 turns either off; every other bound must be positive


@dataclass(frozen=True)
class Settings:
    max_body_bytes: int = 1_000_000
    # What the time budget can answer: a 100,000-node graph is some 16 MB. The framework parses a body on the
    # event loop (about 1.3 s for 16 MB here), so a larger one would hold every other request and still end in 503.
    max_graph_body_bytes: int = 20_000_000
    max_source_length: int = Limits.max_source_length
    max_depth: int = Limits.max_depth
    max_nodes: int = Limits.max_nodes
    max_check_evaluations: int = Limits.max_check_evaluations
    max_variant_steps: int = Limits.max_variant_steps
    max_statements: int = Limits.max_statements
    max_call_depth: int = Limits.max_call_depth
    max_collection_length: int = Limits.max_collection_length
    max_backward_calls: int = Limits.max_backward_calls
    max_printed_characters: int = Limits.max_printed_characters
    max_text_length: int = Limits.max_text_length
    max_fstring_fields: int = Limits.max_fstring_fields
    max_files_bytes: int = Limits.max_files_bytes
    max_label_length: int = Limits.max_label_length
    time_budget: float = 2.0
    browser_run_seconds: float = 5.0
    worker_threads: int = 4
    response_cache_bytes: int = 16_000_000
    retry_after: int = 2
    max_reported_errors: int = 20
    max_echo_length: int = 100
    max_discard_bytes: int = 10_000_000
    linger_seconds: float = 30.0
    max_linger_bytes: int = 256_000_000
    timeout_keep_alive: float = 5.0
    timeout_headers: float = 10.0
    timeout_body: float = 30.0
    max_connections: int = 1000
    public_url: str = ""
    allowed_hosts: str = ""
    trusted_proxies: str = ""
    redis_url: str = ""
    redis_timeout: float = 2.0
    redis_retry_seconds: float = 2.0
    room_idle_seconds: float = 3600.0
    room_max_rooms: int = 1000
    room_creations_per_hour: int = 30
    room_max_members: int = 500
    room_wrong_codes_per_minute: int = 20
    room_max_message_bytes: int = 200_000
    room_messages_per_second: float = 30.0
    room_message_burst: int = 60
    room_join_seconds: float = 10.0
    room_send_queue: int = 256
    job_workers: int = 2
    job_max_jobs: int = 20
    job_max_per_client: int = 2
    job_cpu_seconds: int = 7200
    job_memory_bytes: int = 2_000_000_000
    job_max_statements: int = 2_000_000_000
    job_max_collection_length: int = 1_000_000
    job_wall_seconds: float = 14400.0  # twice the CPU limit: 1,000 microgpt steps took 7,680 s on a busy machine
    job_expire_seconds: float = 3600.0
    job_worker_timeout: float = 10.0
    job_enqueue_seconds: float = 60.0  # a stored job RQ does not hold after this never reached the queue
    job_snapshot_every: int = 2
    job_snapshot_bytes: int = 200_000_000

    def __post_init__(self):
        for field in fields(self):
            value = getattr(self, field.name)
            if field.type is str:
                if not isinstance(value, str):
                    raise ValueError(f"setting {field.name} must be text, not {value!r}")
                continue
            allowed = int if field.type is int else (int, float)
            lowest_ok = value >= 0 if field.name in MAY_BE_ZERO else value > 0
            if isinstance(value, bool) or not isinstance(value, allowed) or not (lowest_ok and math.isfinite(value)):
                raise ValueError(
                    f"setting {field.name} must be {_kind(field.type, field.name in MAY_BE_ZERO)}, not {value!r}"
                )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> "Settings":
        values = {}
        for field in fields(cls):
            variable = PREFIX + field.name.upper()
            raw = environ.get(variable)
            if raw is None or raw.strip() == "":
                continue
            try:
                values[field.name] = raw.strip() if field.type is str else field.type(raw.replace("_", ""))
            except ValueError:
                raise ValueError(
                    f"{variable} must be {_kind(field.type, field.name in MAY_BE_ZERO)}, not {raw!r}"
                ) from None
        return cls(**values)

    @cached_property
    def limits(self) -> Limits:
        """The engine's share of the settings."""
        return Limits(
            max_source_length=self.max_source_length,
            max_depth=self.max_depth,
            max_nodes=self.max_nodes,
            max_check_evaluations=self.max_check_evaluations,
            max_variant_steps=self.max_variant_steps,
            max_statements=self.max_statements,
            max_call_depth=self.max_call_depth,
            max_collection_length=self.max_collection_length,
            max_backward_calls=self.max_backward_calls,
            max_printed_characters=self.max_printed_characters,
            max_text_length=self.max_text_length,
            max_fstring_fields=self.max_fstring_fields,
            max_files_bytes=self.max_files_bytes,
            max_label_length=self.max_label_length,
        )

    @cached_property
    def job_limits(self) -> Limits:
        """The engine's limits for a job and a job's graph: the request's, but with the job's statements
        and collections (a two-layer transformer's backward() walk holds over 100,000 nodes in one set)."""
        return replace(
            self.limits, max_statements=self.job_max_statements, max_collection_length=self.job_max_collection_length
        )


def _kind(type_, may_be_zero=False):
    if type_ is int:
        return "a whole number, 0 or more" if may_be_zero else "a positive whole number"
    return "a positive number of seconds"
