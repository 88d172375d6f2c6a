/* A test's consistency chart: per scenario, the pass rate (solid) and pass^k (dashed) of each run, in
 * percent, drawn with the vendored uPlot. Data comes from the json_script #consistency-chart-data.
 * Runs whose check versions changed are marked on the x axis (a ◆ under the run's label and a
 * vertical dotted line). The test page loads the region with htmx, so it draws after each swap. */
(function () {
  "use strict";
  var palette = ["#2453c4", "#b3261e", "#12703a", "#855500", "#6a3ba3", "#00838f", "#c2185b", "#5d4037"];
  var plot = null;

  function percent(u, v) { return v == null ? "—" : v + " %"; }

  function markLines(marks) {
    // A plugin: a dotted vertical line at each run whose check versions changed.
    return {
      hooks: {
        draw: function (u) {
          var ctx = u.ctx;
          ctx.save();
          ctx.strokeStyle = "#855500";
          ctx.setLineDash([3, 3]);
          ctx.lineWidth = 1;
          marks.forEach(function (m) {
            var x = Math.round(u.valToPos(m.x, "x", true));
            ctx.beginPath();
            ctx.moveTo(x, u.bbox.top);
            ctx.lineTo(x, u.bbox.top + u.bbox.height);
            ctx.stroke();
          });
          ctx.restore();
        }
      }
    };
  }

  function draw() {
    var holder = document.getElementById("consistency-chart");
    var source = document.getElementById("consistency-chart-data");
    if (plot && (!holder || !document.body.contains(plot.root))) { plot.destroy(); plot = null; }
    if (!holder || !source || typeof uPlot === "undefined" || holder.childElementCount) { return; }
    var data = JSON.parse(source.textContent);
    var marked = {};
    data.marks.forEach(function (m) { marked[m.x] = m.text; });
    var series = [{ label: "Run", value: function (u, x) { return x == null ? "—" : data.labels[x] + (marked[x] ? " ◆ " + marked[x] : ""); } }];
    var columns = [data.x];
    data.series.forEach(function (s, i) {
      var color = palette[i % palette.length];
      series.push({ label: s.label + " pass rate", stroke: color, width: 2, spanGaps: true, points: { show: true, size: 6 }, value: percent });
      columns.push(s.rate);
      series.push({ label: s.label + " pass^" + data.k, stroke: color, width: 2, dash: [6, 4], spanGaps: true, points: { show: true, size: 5 }, value: percent });
      columns.push(s.hat);
    });
    plot = new uPlot({
      width: Math.max(holder.clientWidth, 320),
      height: 280,
      series: series,
      plugins: [markLines(data.marks)],
      scales: { x: { time: false, range: [-0.5, Math.max(data.x.length - 0.5, 0.5)] }, y: { range: [0, 100] } },
      axes: [
        {
          splits: function () { return data.x; },
          values: function (u, splits) {
            return splits.map(function (x) { return data.labels[x] + (marked[x] ? "\n◆ checks" : ""); });
          },
          size: 48
        },
        { label: "percent", values: function (u, vals) { return vals.map(function (v) { return v + "%"; }); } }
      ]
    }, columns, holder);
    holder.dataset.drawn = "true";
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
  document.body.addEventListener("htmx:afterSettle", draw);
})();
