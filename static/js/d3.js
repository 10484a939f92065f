// D3 v7 is vendored as a classic script (static/vendor/d3.v7.9.2.min.js) that defines window.d3;
// the modules import it from here so that a missing script fails loudly in one place.
const d3 = globalThis.d3;
if (!d3) throw new Error("valuegraph: D3 did not load (static/vendor/d3.v7.9.2.min.js)");
export default d3;
