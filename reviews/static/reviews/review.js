/* The review page's keyboard (the keys are listed on the page): j next item, k previous, s skip to the next
   item you have not labelled, ArrowUp/ArrowDown or 1-9 choose a check, p pass, f fail, n note (Esc leaves it).
   p and f click the focused check's Pass/Fail button (an htmx form), so the mouse and the keys do the same;
   once every check of the item carries your label, the page moves to the next item. */
(function () {
  "use strict";
  var focused = 0;
  var saved = false;
  var busy = false;

  function root() { return document.getElementById("review"); }
  function cards() { return Array.prototype.slice.call(document.querySelectorAll("#review-checks .check-label")); }
  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT" || el.isContentEditable);
  }
  function focus(index) {
    var all = cards();
    if (!all.length) { return; }
    focused = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (card, i) {
      card.classList.toggle("focused", i === focused);
      card.setAttribute("aria-current", i === focused ? "true" : "false");
    });
  }
  function go(name) {
    var page = root();
    var url = page && page.getAttribute("data-" + name);
    if (url) { window.location.assign(url); }
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (!root()) { return; }
    var all = cards();
    var first = all.findIndex(function (card) { return !card.hasAttribute("data-mine"); });
    focus(first < 0 ? 0 : first);
  });

  document.addEventListener("keydown", function (event) {
    if (!root() || event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (typing(event.target)) {
      if (event.key === "Escape") { event.target.blur(); event.preventDefault(); }
      return;
    }
    var key = event.key;
    var card = cards()[focused];
    if (key === "j") { go("next"); }
    else if (key === "k") { go("previous"); }
    else if (key === "s") { go("skip"); }
    else if (key === "ArrowDown") { focus(focused + 1); }
    else if (key === "ArrowUp") { focus(focused - 1); }
    else if (/^[1-9]$/.test(key)) { focus(Number(key) - 1); }
    else if ((key === "p" || key === "f") && card) {
      var button = card.querySelector('button[data-key="' + key + '"]');
      if (button && !busy) { busy = true; button.click(); }
    } else if (key === "n" && card) {
      var note = card.querySelector("[data-note]");
      if (note) { note.focus(); }
    } else { return; }
    event.preventDefault();
  });

  document.addEventListener("label-saved", function () { saved = true; });
  document.addEventListener("htmx:afterRequest", function () { busy = false; });
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!root() || !event.target || event.target.id !== "review-checks") { return; }
    var all = cards();
    if (!saved) { focus(focused); return; }
    saved = false;
    var after = all.findIndex(function (card, i) { return i > focused && !card.hasAttribute("data-mine"); });
    var any = all.findIndex(function (card) { return !card.hasAttribute("data-mine"); });
    if (after >= 0) { focus(after); }
    else if (any >= 0) { focus(any); }
    else if (root().getAttribute("data-next")) { go("next"); }
    else { focus(focused); }
  });
})();
