/* Monitor dashboard chart: pass rate (%) per check version over time, drawn with the vendored uPlot.
 * Data comes from the json_script element #monitor-chart-data (never from inline HTML), and the
 * chart is redrawn when HTMX swaps the #dashboard region (bucket or window changed). */
(function () {
  "use strict";
  var palette = ["#2453c4", "#b3261e", "#12703a", "#855500", "#6a3ba3", "#00838f", "#c2185b", "#5d4037"];
  var plot = null;

  function percent(u, v) { return v == null ? "—" : v + " %"; }

  function draw() {
    if (plot) { plot.destroy(); plot = null; }
    var holder = document.getElementById("monitor-chart");
    var source = document.getElementById("monitor-chart-data");
    if (!holder || !source || typeof uPlot === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    var series = [{ label: data.bucket === "day" ? "Day (UTC)" : "Hour (UTC)" }];
    var columns = [data.x];
    data.series.forEach(function (s, i) {
      series.push({
        label: s.label + (s.current ? "" : " (earlier version)"),
        stroke: palette[i % palette.length],
        width: 2,
        dash: s.current ? undefined : [6, 4],
        spanGaps: true,
        points: { show: true, size: 6 },
        value: percent
      });
      columns.push(s.values);
    });
    plot = new uPlot({
      width: Math.max(holder.clientWidth, 320),
      height: 300,
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); },
      series: series,
      scales: { y: { range: [0, 100] } },
      axes: [{}, { label: "pass rate", values: function (u, vals) { return vals.map(function (v) { return v + "%"; }); } }]
    }, columns, holder);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
  document.body.addEventListener("htmx:afterSettle", function () {
    // The dashboard region was swapped: its chart holder and data are new elements.
    if (!plot || !document.body.contains(plot.root)) { draw(); }
  });
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      var holder = document.getElementById("monitor-chart");
      if (plot && holder) { plot.setSize({ width: Math.max(holder.clientWidth, 320), height: 300 }); }
    }, 150);
  });
})();
