/* evalconsole: the only script besides htmx. Keeps <details> that the reader opened open when HTMX
   swaps the region they live in (a run's samples refresh while the run is going), and runs the
   copy buttons (a new API token). */
(function () {
  "use strict";
  var open = [];
  document.addEventListener("htmx:beforeSwap", function () {
    open = Array.prototype.map.call(document.querySelectorAll("details[open][id]"), function (d) { return d.id; });
  });
  document.addEventListener("htmx:afterSettle", function () {
    open.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) { details.open = true; }
    });
  });
})();

/* <button data-copy="ID" data-copy-status="ID" hidden>: shown only with this script; copies the text
   of #ID and says so in the status element; if the clipboard is refused, selects the text instead. */
(function () {
  "use strict";
  function say(button, text) {
    var status = document.getElementById(button.getAttribute("data-copy-status"));
    if (status) { status.textContent = text; }
  }
  function select(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  function reveal() {
    Array.prototype.forEach.call(document.querySelectorAll("button[data-copy][hidden]"), function (b) {
      b.hidden = false;
    });
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-copy]") : null;
    var source = button && document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    var text = source.textContent.trim();
    var refused = function () { select(source); say(button, "Press Ctrl+C (⌘C) to copy the selected token."); };
    if (!navigator.clipboard || !navigator.clipboard.writeText) { refused(); return; }
    navigator.clipboard.writeText(text).then(function () { say(button, "Copied to the clipboard."); }, refused);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", reveal);
  } else {
    reveal();
  }
  document.addEventListener("htmx:afterSettle", reveal);
})();
