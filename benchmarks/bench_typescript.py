"""A TypeScript graph run in the learner's browser, beside the same graph from Python through the server.

    python -m benchmarks.bench_typescript [--quick] [--nodes N] [--repeats R]

In headless Chromium (Debian's /usr/bin/chromium, bench_browser's flags) against one uvicorn
server: a residual chain of about 10,000 nodes (x = x*w + x over a thousand shared weights, as
benchmarks.bench_graph's), written twice by a learner:
- in TypeScript, in the course's shape (data, grad, children, localGrads; an iterative backward):
  the page opened with the code, then **Run** pressed. Timed from the click to the first animation
  frame after the graph is drawn: stripping the types, the run in the sandboxed worker, reading the
  graph out of the learner's objects, POST /backward with `graph` (traced and checked), and drawing;
- in Python (micrograd-style, valuegraph's interpreter on the server): the page opened with the
  program, which runs at once. Timed from the start of its POST /backward (the page asking) to the
  same frame: the program run, traced and written on the server, and drawing.
Each row has the load average when it was taken.
"""

import argparse
import os
import shutil
import sys
from urllib.parse import quote

from benchmarks.bench_browser import CHROMIUM, CHROMIUM_FLAGS
from benchmarks.bench_graph import python_program
from benchmarks.bench_http import Server
from benchmarks.common import load, machine, median, print_table

# Our own class in the course's TypeScript shape, with an iterative backward (a recursive one
# would pass the worker's stack on a 10,000-node chain).
TYPESCRIPT_PROGRAM = """class Value {
  data: number;
  grad: number = 0;
  children: Value[];
  localGrads: number[];
  constructor(data: number, children: Value[] = [], localGrads: number[] = []) {
    this.data = data;
    this.children = children;
    this.localGrads = localGrads;
  }
  add(other: Value): Value { return new Value(this.data + other.data, [this, other], [1, 1]); }
  mul(other: Value): Value { return new Value(this.data * other.data, [this, other], [other.data, this.data]); }
  backward(): void {
    const order: Value[] = [];
    const seen = new Set<Value>([this]);
    const stack: [Value, number][] = [[this, 0]];
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const [value, next] = top;
      if (next < value.children.length) {
        top[1] = next + 1;
        const child = value.children[next];
        if (!seen.has(child)) { seen.add(child); stack.push([child, 0]); }
      } else {
        stack.pop();
        order.push(value);
      }
    }
    this.grad = 1;
    for (let i = order.length - 1; i >= 0; i--) {
      const value = order[i];
      value.children.forEach((child, k) => { child.grad += value.localGrads[k] * value.grad; });
    }
  }
}

const ws: Value[] = [];
for (let k = 0; k < 1000; k++) ws.push(new Value(0.001 * ((k % 7) - 3)));
let x = new Value(1.0);
for (let k = 0; k < STEPS; k++) x = x.mul(ws[k % 1000]).add(x);
x.backward();
show(x);
"""

# Polled every frame: the graph of `nodes` nodes is drawn (by either renderer), then the frame that paints it.
PAINTED = """(nodes) => {
  const svg = document.querySelector('[data-vg="graph"] svg');
  if (window.__drawnAt === undefined && svg && Number(svg.dataset.nodeCount) === nodes
      && document.querySelector('[data-vg="caption"]').textContent !== ''
      && (svg.dataset.renderer === 'canvas' || document.querySelectorAll('[data-node-id]').length === nodes)) {
    window.__drawnAt = performance.now();
    requestAnimationFrame(() => { window.__paintFrameAt = performance.now(); });
  }
  return window.__paintFrameAt !== undefined;
}"""


def typescript_program(size: int) -> str:
    return TYPESCRIPT_PROGRAM.replace("STEPS", str((size - 1001) // 2))


def run_to_picture(browser, url, nodes) -> float:
    """ms from pressing Run to the frame that paints the graph."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(url)
    run = page.get_by_role("button", name="Run", exact=True)
    run.wait_for()
    page.evaluate("() => { window.__runAt = performance.now(); }")
    run.click()
    page.wait_for_function(PAINTED, arg=nodes, polling="raf", timeout=180_000)
    took = page.evaluate("window.__paintFrameAt - window.__runAt")
    context.close()
    return took


def asked_to_picture(browser, url, nodes) -> float:
    """ms from the page's POST /backward starting to the frame that paints the graph."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(PAINTED, arg=nodes, polling="raf", timeout=180_000)
    took = page.evaluate("""() => {
        const api = performance.getEntriesByType('resource').find((r) => r.name.includes('/backward'));
        return window.__paintFrameAt - api.startTime;
    }""")
    context.close()
    return took


def main(quick=False, argv=()):
    """benchmarks.run calls main(quick); `python -m benchmarks.bench_typescript` passes its arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller graph, once: checks the script, not figures")
    parser.add_argument("--nodes", type=int, default=3_001 if quick else 10_001)
    parser.add_argument("--repeats", type=int, default=1 if quick else 3)
    args = parser.parse_args(list(argv))
    if args.quick and not quick:
        return main(True, [arg for arg in argv if arg != "--quick"])
    print(f"\n## A TypeScript graph in the browser\n\n{machine()}; {load()}")
    if not shutil.which(CHROMIUM):
        print(f"\n{CHROMIUM} is not installed (apt-get install chromium): browser timings skipped.")
        return
    from playwright.sync_api import sync_playwright

    nodes = 1001 + 2 * ((args.nodes - 1001) // 2)
    cases = {
        "TypeScript in the browser: Run pressed → first picture": (
            run_to_picture,
            f"/?language=typescript&expression={quote(typescript_program(args.nodes))}",
        ),
        "peer: the same graph as a Python program: page asks /backward → first picture": (
            asked_to_picture,
            f"/?expression={quote(python_program(args.nodes))}",
        ),
    }
    rows = []
    # The server gets a long budget, so that a loaded machine's slow answer is timed, not cut off.
    with Server(1, environment={"VALUEGRAPH_TIME_BUDGET": "120"}) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            for name, (measure, path) in cases.items():
                times = [measure(browser, server.url + path, nodes) for _ in range(args.repeats)]
                rows.append([name, f"{nodes:,}", f"{median(times):,.0f}", f"{min(times):,.0f}", loadavg()])
        finally:
            browser.close()
    print_table(
        f"A {nodes:,}-node graph from asking to first picture (median of {args.repeats})",
        ["way in", "nodes", "ms (median)", "ms (best)", "load (1 min)"],
        rows,
        [load()],
    )


def loadavg() -> str:
    return f"{os.getloadavg()[0]:.1f}"


if __name__ == "__main__":
    main(argv=sys.argv[1:])
