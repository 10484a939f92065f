// The story of the node clicked, as a card over a corner of the graph. On a laptop the story's own
// place (the page's editor column) is below the fold, and the embed has no room for it at all: a
// learner who clicks a node should see its story where they are looking. The card is the story
// element itself, moved into the graph's box while a node is pinned and back home after, so that
// everything that fills or finds the story (walkpanel.js, scopeview.js, tests) keeps one element.

import { make } from "./courseapi.js";

// Tried in this order; the first that hides the fewest nodes wins (the top first: the graph's
// note, "Drawing 3,000 nodes…", sits at the bottom).
const CORNERS = ["top left", "top right", "bottom left", "bottom right"];
const MARGIN = 8; // px between the card and the graph box's edge (as in the CSS)
// What a corner costs: each node it hides, more for the node clicked and the walk's current node,
// and as much as hiding the node clicked for a card off the screen (a phone scrolled to the graph's foot)
// or over what else floats over the graph (the self-contained file's legend).
const COST = { node: 1, followed: 100, pinned: 1000, offScreen: 1000, overlay: 1000 };
const OVERLAYS = '[data-vg="legend"]';
// The camera shows the graph beside the card (or above or below it, where the card spans the width, as on a
// phone) when that leaves it at least this share of the graph's box; else the card stays over the graph.
const MIN_ROOM = 0.4;

/**
 * `graphBox` is the graph's box (data-vg="graph"); `onClose()` unpins; `nodesSeen()` gives, for the
 * view on screen, {count, at(id)}: how many nodes there are and a node's centre in graph-box pixels
 * (null: not drawn), to choose a corner; `onCover(edges)` says which edges of the box the card covers
 * ({left: px} and so on; null: none), for the camera to show the graph beside it.
 */
export function createStoryCard(root, graphBox, { onClose, nodesSeen, onCover }) {
  const story = root.querySelector('[data-vg="story"]');
  const doc = story.ownerDocument;
  const home = doc.createComment(" the story's place when no node is pinned ");
  story.before(home);
  const close = make("button", {
    className: "vg-story-close",
    text: "×",
    attrs: { type: "button", "data-vg": "story-close", "aria-label": "Close the node's story", title: "Close (Esc)" },
  });
  story.prepend(close);
  close.addEventListener("click", () => onClose());

  let open = false;
  let seen = []; // the nodes the card must not hide: [the pinned one, the walk's current one]
  let frame = 0;
  let afresh = false; // a corner is to be chosen anew in the next frame (a new pin), whatever else comes first

  /** Open the card (a node is pinned) or put the story back; `mustSee` are node ids. */
  function show(on, mustSee = []) {
    const moved = on !== open;
    const samePinned = !moved && seen[0] === mustSee[0];
    const wasPinned = seen[0];
    seen = mustSee;
    if (moved) {
      open = on;
      const hadFocus = story.contains(doc.activeElement);
      if (on) {
        story.dataset.corner ||= CORNERS[0]; // until place() has measured it
        graphBox.append(story);
      }
      else home.after(story);
      story.classList.toggle("is-card", on);
      // Moving an element drops its focus: a keyboard user who closed the card goes back to the node.
      if (hadFocus && !on) graphBox.querySelector(`[data-node-id="${wasPinned}"] [tabindex]`)?.focus({ preventScroll: true });
    }
    if (!on) {
      if (moved) onCover(null);
      return;
    }
    // Placed once the step's changes are laid out (read in the next frame, as the walk panel reads
    // its lists): a new pin chooses afresh; a step only moves the card off a node it now hides.
    afresh ||= moved || !samePinned;
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => {
      place(afresh);
      afresh = false;
    });
  }

  function place(anew) {
    const width = story.offsetWidth;
    const height = story.offsetHeight;
    const room = { width: graphBox.clientWidth, height: graphBox.clientHeight };
    const rect = (corner) => {
      const x0 = corner.includes("left") ? MARGIN : room.width - MARGIN - width;
      const y0 = corner.includes("top") ? MARGIN : room.height - MARGIN - height;
      return { x0, y0, x1: x0 + width, y1: y0 + height };
    };
    const hides = (r, p) => p && p.x >= r.x0 && p.x <= r.x1 && p.y >= r.y0 && p.y <= r.y1;
    const nodes = nodesSeen();
    if (!anew && !seen.some((id) => hides(rect(story.dataset.corner), nodes.at(id)))) return;
    const [pinned, followed] = seen;
    const costOf = (id) => (id === pinned ? COST.pinned : id === followed ? COST.followed : COST.node);
    const box = graphBox.getBoundingClientRect();
    const screen = doc.defaultView;
    const offScreen = (r) => box.top + r.y0 < 0 || box.top + r.y1 > screen.innerHeight || box.left + r.x0 < 0 || box.left + r.x1 > screen.innerWidth;
    const overlays = [...root.querySelectorAll(OVERLAYS)].map((element) => element.getBoundingClientRect())
      .filter((o) => o.width > 0 && o.height > 0)
      .map((o) => ({ x0: o.left - box.left, y0: o.top - box.top, x1: o.right - box.left, y1: o.bottom - box.top }));
    const overlaps = (r, o) => r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1;
    // The corner the card is in first: on a tie it stays, and the graph beside it does not jump across.
    const corners = [story.dataset.corner, ...CORNERS.filter((corner) => corner !== story.dataset.corner)];
    let best = corners[0];
    let bestCost = Infinity;
    for (const corner of corners) {
      const r = rect(corner);
      let cost = (offScreen(r) ? COST.offScreen : 0) + (overlays.some((o) => overlaps(r, o)) ? COST.overlay : 0);
      for (let id = 0; id < nodes.count && cost < bestCost; id++) if (hides(r, nodes.at(id))) cost += costOf(id);
      if (cost < bestCost) [best, bestCost] = [corner, cost];
    }
    story.dataset.corner = best;
    onCover(coverOf(best, width, height, room));
  }

  return { show };
}

/** The edges of the graph's box a card of this size in this corner takes from the graph (see MIN_ROOM). */
function coverOf(corner, width, height, room) {
  const across = width + 2 * MARGIN;
  const down = height + 2 * MARGIN;
  if (room.width - across >= room.width * MIN_ROOM) return { [corner.includes("left") ? "left" : "right"]: across };
  if (room.height - down >= room.height * MIN_ROOM) return { [corner.includes("top") ? "top" : "bottom"]: down };
  return null;
}
