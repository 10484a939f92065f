// Where the update callouts ("a.grad += 3 × 1") go, so that no two labels and no record overlap.
//
// The local-gradient pills stay on their edges; each update of the current step gets its own
// callout, tried at points along its edge and then further off to each side of it, and placed at
// the first spot that is clear of every record, op circle, pill and callout placed before it.
// Pure geometry on boxes {x0, y0, x1, y1}; the caller draws.

const ALONG = [0.5, 0.38, 0.62, 0.26, 0.74, 0.15, 0.85]; // share of the edge's length
const GAP = 4; // px kept clear around a callout
const SHIFTS = 4; // how many half-sizes a callout may move off its edge, each way

const overlaps = (a, b) => a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;

function overlapArea(a, b) {
  const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
  const h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
  return w > 0 && h > 0 ? w * h : 0;
}

const boxAt = (x, y, width, height) => ({ x0: x - width / 2, y0: y - height / 2, x1: x + width / 2, y1: y + height / 2 });

/**
 * Place callouts. `obstacles`: boxes nothing may cover. `callouts`: [{width, height,
 * pointAt(t) -> [x, y], across: [dx, dy] (a unit vector across the edge)}]. `bounds`: the box the
 * callouts should stay in (the picture). Returns [{x, y, moved}] in the same order: the centre of
 * each callout, and whether it left its edge (the caller then draws a leader to it).
 */
export function placeCallouts(obstacles, callouts, bounds = null) {
  const taken = obstacles.slice();
  return callouts.map(({ width, height, pointAt, across }) => {
    // Candidates: points along the edge, then shifted by half-sizes in both directions, nearest first
    // (across the edge before along the flow).
    const candidates = [];
    for (const t of ALONG) {
      const [px, py] = pointAt(t);
      for (let i = -SHIFTS; i <= SHIFTS; i++) {
        for (let j = -SHIFTS; j <= SHIFTS; j++) {
          const dx = (i * (width + 2 * GAP)) / 2;
          const dy = (j * (height + 2 * GAP)) / 2;
          const alongFlow = Math.abs(across[0] ? dy : dx) * 1.5; // moving along the flow reads worse
          candidates.push({ x: px + dx, y: py + dy, cost: Math.abs(across[0] ? dx : dy) + alongFlow + Math.abs(t - 0.5) * 60, moved: i !== 0 || j !== 0 });
        }
      }
    }
    candidates.sort((a, b) => a.cost - b.cost);
    let best = null;
    for (const c of candidates) {
      const box = boxAt(c.x, c.y, width, height);
      const padded = { x0: box.x0 - GAP, y0: box.y0 - GAP, x1: box.x1 + GAP, y1: box.y1 + GAP };
      const outside = bounds ? (width * height - overlapArea(box, bounds)) * 0.05 : 0; // off the picture (Fit would cut it): better than covering something
      let cover = outside;
      for (const other of taken) if (overlaps(padded, other)) cover += overlapArea(padded, other);
      if (!best || cover < best.cover) best = { box, cover, moved: c.moved };
      if (cover === 0) break;
    }
    taken.push(best.box);
    return { x: (best.box.x0 + best.box.x1) / 2, y: (best.box.y0 + best.box.y1) / 2, moved: best.moved };
  });
}
