/* evalconsole: the only script besides htmx. Keeps <details> that the reader opened open when HTMX
   swaps the region they live in (a run's samples refresh while the run is going). */
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
