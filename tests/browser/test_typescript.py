"""TypeScript and JavaScript run in the learner's browser: a Web Worker inside the sandboxed frame
GET /sandbox serves (opaque origin, a CSP with no network), its graph posted to /backward as `graph`."""

import http.server
import threading
import time

import pytest
from pagehelpers import node, url_for, wait_for_graph
from playwright.sync_api import expect

# The learner's Value class in the course's TypeScript shape (our own, written for this test),
# then chapter 2's program: a = 2, b = 3, c = a * b, L = c + a.
TS_CLASS = """class Value {
  data: number;
  grad: number = 0;
  children: Value[];
  localGrads: number[];
  label: string;
  constructor(data: number, children: Value[] = [], localGrads: number[] = [], label: string = "") {
    this.data = data;
    this.children = children;
    this.localGrads = localGrads;
    this.label = label;
  }
  add(o: Value, label = ""): Value { return new Value(this.data + o.data, [this, o], [1, 1], label); }
  mul(o: Value, label = ""): Value { return new Value(this.data * o.data, [this, o], [o.data, this.data], label); }
  backward(): void {
    const order: Value[] = [];
    const seen = new Set<Value>();
    const visit = (v: Value): void => {
      if (seen.has(v)) return;
      seen.add(v);
      for (const c of v.children) visit(c);
      order.push(v);
    };
    visit(this);
    this.grad = 1;
    for (const v of order.reverse()) v.children.forEach((c, i) => { c.grad += v.localGrads[i] * v.grad; });
  }
}
"""
CHAPTER_2 = """const a = new Value(2, [], [], "a");
const b = new Value(3, [], [], "b");
const c = a.mul(b, "c");
const L = c.add(a, "L");
L.backward();
show(L);
"""

# micrograd-JS style: _prev, _op and _backward closures; no local gradients stored.
JS_CLASS = """class Value {
  constructor(data, children = [], op = "", label = "") {
    this.data = data; this.grad = 0; this._prev = new Set(children); this._op = op; this.label = label;
    this._backward = () => {};
  }
  add(o, label) {
    const out = new Value(this.data + o.data, [this, o], "+", label);
    out._backward = () => { this.grad += out.grad; o.grad += out.grad; };
    return out;
  }
  mul(o, label) {
    const out = new Value(this.data * o.data, [this, o], "*", label);
    out._backward = () => { this.grad += o.data * out.grad; o.grad += this.data * out.grad; };
    return out;
  }
  backward() {
    const order = []; const seen = new Set();
    const visit = (v) => { if (!seen.has(v)) { seen.add(v); v._prev.forEach(visit); order.push(v); } };
    visit(this);
    this.grad = 1;
    order.reverse().forEach((v) => v._backward());
  }
}
"""

ANSWERED_400 = r"status of 4\d\d"
# gradient_check's messages for the three broken classes below.
MESSAGE_ASSIGN = (
    "a is used by 2 nodes; its grad holds only the last one (yours 3, expected 4): "
    "add each contribution with +=, not =."
)
MESSAGE_NO_VISITED = (
    "c is reached by 2 paths and passed its gradient on 2 times: your topological sort needs a visited set, "
    "so each node is added once."
)
MESSAGE_LOCAL = (
    "Your `mul` gives the first input the local gradient `this.data`; it should be `other.data` "
    "(and the second `this.data`)."
)


def open_code(page, code, language="typescript", **params):
    """Open a link carrying `code`, and press Run."""
    page.goto(url_for(code, language=language, **params))
    page.get_by_role("button", name="Run", exact=True).click()


def summary(page):
    return page.locator('[data-vg="graph-summary"]').text_content()


def check_message(page):
    message = page.locator('[data-vg="check-message"]')
    message.wait_for()
    return message


def error_message(page):
    error = page.locator('[data-vg="error-message"]')
    error.wait_for()
    page.wait_for_function("() => document.querySelector('[data-vg=\"error-message\"]').textContent !== ''")
    return error.text_content()


def test_a_typescript_class_in_the_chapters_shape_draws_chapter_2(page):
    open_code(page, TS_CLASS + CHAPTER_2)
    wait_for_graph(page, 4)
    assert summary(page).startswith("4 nodes · 4 edges · output L = 8")
    message = check_message(page)
    assert message.get_attribute("data-status") == "ok"
    assert page.locator('[data-vg="language"]').input_value() == "typescript"
    assert "language=typescript" in page.url


def test_a_micrograd_js_class_has_its_local_gradients_derived_from_op(page):
    open_code(page, JS_CLASS + CHAPTER_2.replace("[], [], ", "[], '', "), language="javascript")
    wait_for_graph(page, 4)
    assert summary(page).startswith("4 nodes · 4 edges · output L = 8")
    assert check_message(page).get_attribute("data-status") == "ok"


def test_the_starter_programs_run(page):
    page.goto("/")
    wait_for_graph(page)
    for language in ("typescript", "javascript"):
        page.get_by_label("Language").select_option(language)  # the untouched example gives way to the starter
        assert "show(L)" in page.get_by_role("textbox", name="Program", exact=True).input_value()
        page.get_by_role("button", name="Run", exact=True).click()
        page.wait_for_function(
            """(language) => location.search.includes('language=' + language)
                && document.querySelector('[data-vg="graph-summary"]').textContent.startsWith('4 nodes')""",
            arg=language,
        )
        assert check_message(page).get_attribute("data-status") == "ok"
    page.get_by_label("Language").select_option("")  # and the untouched starter gives way to the example again
    page.wait_for_function("() => !location.search.includes('language=')")
    wait_for_graph(page, 4)
    assert page.get_by_role("textbox", name="Program", exact=True).input_value() == "a = 2\nb = 3\nc = a * b\nL = c + a"
    assert "language=" not in page.url and summary(page).startswith("4 nodes · 4 edges · output L = 8")


# The course's class with an op on each node, so that local gradients are checked against its rule.
TS_CLASS_WITH_OPS = TS_CLASS.replace("  label: string;\n", '  label: string;\n  op: string = "";\n').replace(
    'mul(o: Value, label = ""): Value { return new Value(this.data * o.data, [this, o], [o.data, this.data], label); }',
    'mul(o: Value, label = ""): Value {\n'
    "    const out = new Value(this.data * o.data, [this, o], [o.data, this.data], label);\n"
    '    out.op = "*";\n    return out;\n  }',
)
# An inner node used twice (L = (c + a) * c), so that a sort without its visited set walks c twice.
REUSED = """const a = new Value(2, [], [], "a");
const b = new Value(3, [], [], "b");
const c = a.mul(b, "c");
const d = c.add(a, "d");
const L = d.mul(c, "L");
L.backward();
show(L);
"""
BROKEN_CLASSES = {  # bug: (the class, the class with the bug, the program, gradient_check's message)
    "assign": (
        TS_CLASS,
        TS_CLASS.replace("c.grad += v.localGrads[i]", "c.grad = v.localGrads[i]"),
        CHAPTER_2,
        MESSAGE_ASSIGN,
    ),
    "no-visited-set": (TS_CLASS, TS_CLASS.replace("      if (seen.has(v)) return;\n", ""), REUSED, MESSAGE_NO_VISITED),
    "wrong-local-gradient": (
        TS_CLASS_WITH_OPS,
        TS_CLASS_WITH_OPS.replace(
            "[o.data, this.data], label);\n    out.op", "[this.data, o.data], label);\n    out.op"
        ),
        CHAPTER_2,
        MESSAGE_LOCAL,
    ),
}


def test_the_class_with_ops_is_right_as_it_stands(page):
    open_code(page, TS_CLASS_WITH_OPS + CHAPTER_2)
    wait_for_graph(page, 4)
    assert check_message(page).get_attribute("data-status") == "ok"


@pytest.mark.parametrize("bug", BROKEN_CLASSES)
def test_a_broken_class_is_marked_wrong_with_its_message(page, bug):
    right, broken, program, expected = BROKEN_CLASSES[bug]
    assert broken != right  # the bug was put in (the replace found its text)
    open_code(page, broken + program)
    wait_for_graph(page, 5 if bug == "no-visited-set" else 4)
    message = check_message(page)
    assert message.get_attribute("data-status") == "wrong"
    assert message.text_content() == expected


# A training loop that never sets the grads back to 0: each backward() adds to what the last one left.
NOT_RESET = """const a = new Value(2, [], [], "a");
const b = new Value(3, [], [], "b");
let L = a;
for (let step = 0; step < 2; step++) {
  if (step > 0) a.data -= 0.1 * a.grad;
  L = a.mul(b, "c").add(a, "L");
  L.backward();
}
"""
MESSAGE_NOT_RESET = (
    "These grads add to what an earlier backward() left: when this backward() began, b's grad was already 2 "
    "(and the grad of 1 other node not 0); set every grad back to 0 before each backward() call, "
    "unless you mean to add them up."
)


# The same class keeping its grad behind an accessor of its own.
WITH_ACCESSOR = TS_CLASS_WITH_OPS.replace(
    "  grad: number = 0;\n",
    "  _grad: number = 0;\n  get grad(): number { return this._grad; }\n  set grad(g: number) { this._grad = g; }\n",
)


@pytest.mark.parametrize("shown", [True, False], ids=["show", "no_show"])
@pytest.mark.parametrize("grad", ["field", "accessor"])
def test_grads_an_earlier_backward_left_are_named_as_the_cause(page, shown, grad):
    cls = TS_CLASS_WITH_OPS if grad == "field" else WITH_ACCESSOR
    assert grad == "field" or "get grad()" in cls
    open_code(page, cls + NOT_RESET + ("show(L);\n" if shown else ""))
    wait_for_graph(page, 4)
    message = check_message(page)
    assert message.get_attribute("data-status") == "wrong"
    assert message.text_content() == MESSAGE_NOT_RESET


# The course's class whose backward sets every grad back to 0 before its walk.
ZEROING = TS_CLASS_WITH_OPS.replace(
    "    this.grad = 1;\n", "    for (const v of order) v.grad = 0;\n    this.grad = 1;\n"
)


def test_a_backward_that_zeroes_the_grads_first_began_from_0(page):
    assert ZEROING != TS_CLASS_WITH_OPS
    open_code(page, ZEROING + NOT_RESET)
    wait_for_graph(page, 4)
    assert check_message(page).get_attribute("data-status") == "ok"
    # with a rule broken as well: that alone is said, not the grads before the backward zeroed them
    broken = ZEROING.replace("[o.data, this.data], label);\n    out.op", "[this.data, o.data], label);\n    out.op")
    assert broken != ZEROING
    open_code(page, broken + NOT_RESET)
    wait_for_graph(page, 4)
    message = check_message(page)
    assert message.get_attribute("data-status") == "wrong"
    assert message.text_content().startswith("Your `mul` gives the first input the local gradient `this.data`")
    assert "earlier backward()" not in message.text_content()


def test_a_syntax_error_has_its_line_and_column_marked(page):
    open_code(page, TS_CLASS + "const a = new Value(2;\n")
    text = error_message(page)
    line = TS_CLASS.count("\n") + 1
    assert text.startswith("Syntax error:")
    goto = page.locator('[data-vg="error-goto"]')
    assert goto.text_content().startswith(f"Go to line {line}, column ")


def test_without_show_the_value_backward_last_ran_on_is_drawn(page):
    open_code(page, TS_CLASS + CHAPTER_2.replace("show(L);\n", ""))
    wait_for_graph(page, 4)
    assert summary(page).startswith("4 nodes · 4 edges · output L = 8")
    assert check_message(page).get_attribute("data-status") == "ok"


def test_without_show_each_backward_call_is_a_run_taken_as_it_left_the_graph(page):
    # Two backward() calls; the first graph's data changes after its call, as a training step would.
    program = CHAPTER_2.replace("show(L);\n", "") + (
        'const M = L.mul(new Value(2, [], [], "two"), "M");\nM.backward();\na.data = 100;\n'
    )
    open_code(page, TS_CLASS + program, run=0)
    wait_for_graph(page, 4)
    assert summary(page).startswith("4 nodes · 4 edges · output L = 8")  # run 0: L, with a's data as it was
    assert check_message(page).get_attribute("data-status") == "ok"
    open_code(page, TS_CLASS + program)  # the last run
    wait_for_graph(page, 6)
    assert summary(page).startswith("6 nodes · 6 edges · output M = 16")


def test_without_show_and_no_backward_method_to_watch_the_page_says_add_show(page):
    # backward is a function of its own here, not a method of the class: nothing shows what it ran on.
    code = TS_CLASS.replace("  backward(): void {\n", "  walkBack(): void {\n") + (
        "function backward(v: Value): void { v.walkBack(); }\n"
    )
    open_code(page, code + CHAPTER_2.replace("show(L);\n", "").replace("L.backward();", "backward(L);"))
    assert "add show(L)" in error_message(page)


def test_each_node_links_to_the_line_that_made_it(page):
    open_code(page, TS_CLASS + CHAPTER_2)
    wait_for_graph(page, 4)
    first = TS_CLASS.count("\n") + 1  # CHAPTER_2's first line in the editor
    for label, line in (("a", first), ("c", first + 2), ("L", first + 3)):
        node(page, label).hover()
        expect(page.locator(".vg-link-hover")).to_have_attribute("data-line", str(line))
        expect(page.locator("mark.vg-link-mark")).to_have_text([CHAPTER_2.splitlines()[line - first]])


def test_a_runtime_error_says_where(page):
    open_code(page, "const v: any = null;\nv.data = 1;\n")
    assert "TypeError" in error_message(page)
    assert page.locator('[data-vg="error-goto"]').text_content().startswith("Go to line 2, column")


def test_an_endless_loop_is_stopped_at_the_time_limit_and_the_page_stays_responsive(page):
    started = time.monotonic()
    open_code(page, "while (true) {}\n")
    # While the worker spins, the page still answers: a script in it runs at once.
    assert page.evaluate("() => 1 + 1") == 2
    page.get_by_role("button", name="Fit to screen").click()
    text = error_message(page)
    assert "Stopped after 5 s" in text and "VALUEGRAPH_BROWSER_RUN_SECONDS" in text
    assert 4.5 < time.monotonic() - started < 15


def test_the_node_limit_stops_a_huge_graph(page):
    # Two nodes an iteration: 260,001 nodes, past the default VALUEGRAPH_MAX_NODES of 250,000.
    code = TS_CLASS + "let s = new Value(0);\nfor (let i = 0; i < 130000; i++) s = s.add(new Value(1));\nshow(s);\n"
    open_code(page, code)
    assert "VALUEGRAPH_MAX_NODES" in error_message(page)


class RecordingHandler(http.server.BaseHTTPRequestHandler):
    requests = []

    def do_GET(self):
        RecordingHandler.requests.append(self.path)
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(b"self.leaked = true;")

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def other_server():
    """A small HTTP server on another port that records every request it gets."""
    RecordingHandler.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RecordingHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# Chromium logs each request the policy refuses.
@pytest.mark.allow_console(r"Content Security Policy|Refused|violates|net::ERR|WebSocket")
def test_the_code_reaches_no_network(page, other_server):
    attempts = f"""const host = "{other_server}";
const results: string[] = [];
const attempt = (name: string, f: () => void) => {{
  try {{ f(); results.push(name + ": ran"); }} catch (e) {{ results.push(name + ": " + e); }}
}};
attempt("fetch", () => {{ fetch("http://" + host + "/fetch").catch(() => {{}}); }});
attempt("xhr", () => {{ const x = new XMLHttpRequest(); x.open("GET", "http://" + host + "/xhr"); x.send(); }});
attempt("websocket", () => {{ new WebSocket("ws://" + host + "/ws"); }});
attempt("importScripts", () => {{ (self as any).importScripts("http://" + host + "/import.js"); }});
attempt("document", () => {{ (self as any).document.title = "x"; }});
attempt("parent", () => {{ (self as any).parent.postMessage("x", "*"); }});
const start = Date.now();
while (Date.now() - start < 300) {{}}
"""
    open_code(page, attempts + TS_CLASS + CHAPTER_2)
    wait_for_graph(page, 4)
    page.wait_for_timeout(1000)  # time for any request that got out to arrive
    assert RecordingHandler.requests == []
    # The frame's own page carries the policy that forbids it all.
    assert page.evaluate("() => document.querySelector('iframe[sandbox]').getAttribute('sandbox')") == "allow-scripts"


def test_the_sandbox_page_allows_no_network(page, base_url):
    response = page.request.get(f"{base_url}/sandbox")
    policy = response.headers["content-security-policy"]
    for rule in ("default-src 'none'", "connect-src 'none'", "worker-src blob:"):
        assert rule in policy
    assert "'self'" not in policy


def test_a_link_with_code_does_not_run_before_run(page):
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url_for(TS_CLASS + CHAPTER_2, language="typescript"))
    hint = page.locator('[data-vg="run-hint"]')
    hint.wait_for()
    assert "press Run" in hint.text_content()
    page.wait_for_timeout(500)
    assert not any(url.endswith("/sandbox") or url.endswith("/backward") for url in requests)
    assert page.locator('[data-vg="graph"] svg[data-node-count]').count() == 0
    assert TS_CLASS.splitlines()[0] in page.get_by_role("textbox", name="Program", exact=True).input_value()
    page.get_by_role("button", name="Run", exact=True).click()
    wait_for_graph(page, 4)
