/* Monitor dashboard chart: pass rate (%) per check version over time, drawn with the vendored uPlot.
 * Data comes from the json_script element #monitor-chart-data (never from inline HTML), and the
 * chart is redrawn when HTMX swaps the #dashboard region (bucket or window changed). */
(function () {
  "use strict";
  var palette = ["#2453c4", "#b3261e", "#12703a", "#855500", "#6a3ba3", "#00838f", "#c2185b", "#5d4037"];
  var plot = null;

  function percent(u, v) { return v == null ? "—" : v + " %"; }
  // Times in UTC and 24-hour ISO form, like the tables on the page ("2026-11-30 04:00").
  function iso(ts) { return new Date(ts * 1e3).toISOString(); }
  function when(daily) {
    return function (u, ts) { return ts == null ? "—" : iso(ts).slice(0, 10) + (daily ? "" : " " + iso(ts).slice(11, 16)); };
  }
  function ticks(daily) {
    return function (u, splits) {
      return splits.map(function (ts, i) {
        var s = iso(ts), day = s.slice(5, 10), hm = s.slice(11, 16);
        if (daily) { return day; }
        return (i === 0 || hm === "00:00") ? hm + "\n" + day : hm;
      });
    };
  }

  function draw() {
    if (plot) { plot.destroy(); plot = null; }
    var holder = document.getElementById("monitor-chart");
    var source = document.getElementById("monitor-chart-data");
    if (!holder || !source || typeof uPlot === "undefined") { return; }
    var data = JSON.parse(source.textContent);
    var daily = data.bucket === "day";
    var series = [{ label: daily ? "Day (UTC)" : "Hour (UTC)", value: when(daily) }];
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
      axes: [{ values: ticks(daily) }, { label: "pass rate", values: function (u, vals) { return vals.map(function (v) { return v + "%"; }); } }]
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
