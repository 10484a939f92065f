// Whether a drawing is moving: while any transition tracked on an element runs (the camera's pan
// and zoom, records gliding to new places), the element says data-motion="moving"; then "still".
// Tests and scripts wait for "still" instead of guessing how long a move takes.

const running = new WeakMap(); // element -> transitions running

/** Mark `element` still (a renderer calls this once for the element it draws into). */
export function markStill(element) {
  element.dataset.motion = "still";
}

/** Count a D3 transition as motion of `element` until it ends or is interrupted; returns it. */
export function track(element, transition) {
  running.set(element, (running.get(element) ?? 0) + 1);
  element.dataset.motion = "moving";
  const done = () => {
    const left = running.get(element) - 1;
    running.set(element, left);
    if (left === 0) element.dataset.motion = "still";
  };
  transition.end().then(done, done);
  return transition;
}
