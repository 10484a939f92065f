"""How far past its time budget each kind of route answers its 503, on a real server.

    python -m benchmarks.bench_budget [--budget S] [--runs N]

One `uvicorn app.main:app` with VALUEGRAPH_TIME_BUDGET=S (default 0.5). Each row is a request made
to run past the budget in one kind of work (tests/test_time_budget.py holds the same programs, sized
for 0.5 s: a larger budget lets some finish), beside a peer: a loop of one short string operation,
the cheapest work to stop, so that its overrun is what the server itself costs. Figures are the
server's own time (Server-Timing, from receiving the request to sending the 503) minus the budget,
median and worst of N runs; beside them the run-queue wait of the server's threads after the budget
ran out (the CPU the machine withheld), and the client's own wall time, which also counts
connecting and reading on a loaded machine.
"""

import argparse
import sys

from benchmarks.common import REPO, load, median, ms, print_table

sys.path.insert(0, str(REPO / "tests"))  # tests/test_time_budget.py imports realservers as the tests do

from tests.realservers import app_server, timed_past_budget  # noqa: E402
from tests.test_time_budget import ROUTES  # noqa: E402

# A loop of one short string operation: the cheapest work to stop that does not reach the statement limit first.
PEER = ("/backward", {"json": {"expression": "text = 'ab' * 5000\nwhile True:\n    upper = text.upper()\n"}})


def measure(server, budget: float, path: str, request: dict, runs: int) -> list:
    overruns, withheld, client = [], [], []
    for _ in range(runs):
        timed = timed_past_budget(server, budget, "POST", path, **request)
        if timed.response.status_code != 503:
            return [f"{timed.response.status_code}, not 503", "", "", "", ""]
        overruns.append(timed.server_seconds - budget)
        withheld.append(timed.withheld_seconds)
        client.append(timed.response.elapsed.total_seconds() - budget)
    return [ms(median(overruns)), ms(max(overruns)), ms(median(withheld)), ms(median(client))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with app_server(time_budget=args.budget) as server:
        rows = [["peer: a loop of one string operation", *measure(server, args.budget, *PEER, args.runs)]]
        for kind, (path, request) in ROUTES.items():
            rows.append([f"{kind} (POST {path})", *measure(server, args.budget, path, request, args.runs)])
    print_table(
        f"503 past a {args.budget:g} s budget, {args.runs} runs each (ms past the budget)",
        ["work", "server: median", "server: worst", "run-queue wait after the budget", "client: median"],
        rows,
        [f"{load()}; `python3 -m benchmarks.bench_budget --budget {args.budget:g} --runs {args.runs}`"],
    )


if __name__ == "__main__":
    main()
