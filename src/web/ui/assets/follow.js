// The cellbox web view: following the end of the page while output arrives.
"use strict";

// `followEnd(anew)`: what the page script calls once a session's reading is on the page.
const followEnd = (() => {
  // The reader follows the end of the page until they scroll up themselves (a wheel, a touch, a key, the
  // scrollbar), and again once they are back at the end: while following, the page and the stream being
  // written stay at their ends, once a frame, whatever grew them (output, a reading, an image loading).
  // The page's own changes (a shorter reading, trimmed cells) never turn following off.
  const cells = document.getElementById("cells");
  let following = true;
  let followFrame = 0;
  let lastY = 0;
  const grown = new Set();
  const stopFollowing = () => (following = false);
  const atPageEnd = () => window.scrollY + window.innerHeight >= document.body.scrollHeight - 24;
  const wheeled = (event) => (event.deltaY < 0 ? stopFollowing() : atPageEnd() && (following = true));
  window.addEventListener("wheel", wheeled, { passive: true });
  window.addEventListener("touchmove", stopFollowing, { passive: true });
  window.addEventListener("keydown", (event) => {
    if (["ArrowUp", "PageUp", "Home"].includes(event.key)) stopFollowing();
    if (event.key === "End") following = true;
  });
  // A press on the page's scrollbar, right of its content.
  const onScrollbar = (event) => event.clientX >= document.documentElement.clientWidth;
  window.addEventListener("mousedown", (event) => onScrollbar(event) && stopFollowing());
  window.addEventListener(
    "scroll",
    () => {
      // Only the reader's scroll down to the end follows again: not the first steps of their animated
      // scroll up (Home, PageUp), still near the end, nor the page's own scroll, whose event may come
      // after their key.
      const down = window.scrollY > lastY;
      lastY = window.scrollY;
      if (down && atPageEnd()) following = true;
    },
    { passive: true },
  );

  // Keep the page at its end, from the next frame, while the reader follows it; `anew` (a session
  // just chosen) makes them follow.
  function followEnd(anew) {
    if (anew) following = true;
    if (!following || followFrame) return;
    followFrame = requestAnimationFrame(() => {
      followFrame = 0;
      const chosen = document.getSelection();
      // Text the reader is selecting in a cell is not moved from under them.
      if (!following || (chosen && !chosen.isCollapsed && cells.contains(chosen.anchorNode))) return grown.clear();
      for (const pre of grown) pre.scrollTop = pre.scrollHeight;
      grown.clear();
      window.scrollTo(0, document.body.scrollHeight);
      lastY = window.scrollY;
    });
  }

  new MutationObserver((records) => {
    if (!following) return;
    for (const record of records) {
      const node = record.target.nodeType === Node.ELEMENT_NODE ? record.target : record.target.parentElement;
      const pre = node && node.closest("pre");
      if (pre) grown.add(pre);
    }
    followEnd();
  }).observe(cells, { childList: true, subtree: true, characterData: true });
  new ResizeObserver(() => following && followEnd()).observe(cells);
  return followEnd;
})();
