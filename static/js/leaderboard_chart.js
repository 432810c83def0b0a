/* Leaderboard charts: our own SVG, no library, no network. Each [data-chart] element names a JSON spec
   (leaderboard/charts.py) and gets a step chart through measured points only (the vertices come from the
   server: nothing is interpolated here), hover/tap details of the nearest point with every metric, series
   toggles and log axes. By keyboard the chart is one tab stop: arrow keys move between its points (Left/Right
   along a series, Up/Down across series, Home/End), each point's details are shown and announced on focus, Escape
   closes them. Series differ by marker shape and dash as well as colour (leaderboard/charts.py series_style). The
   table under each chart carries every plotted number without JavaScript. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  // Below this chart width the details of a point dock beneath the plot instead of floating over it.
  var DOCK_BELOW_PX = 640;

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  // Marker shapes of leaderboard/charts.py SERIES_MARKERS: an SVG path of radius r around (x, y).
  function polygon(x, y, r, corners, turn, inner) {
    var d = "";
    var count = inner ? corners * 2 : corners;
    for (var i = 0; i < count; i++) {
      var radius = inner && i % 2 ? r * inner : r;
      var angle = turn + (i * 2 * Math.PI) / count;
      d += (i ? "L" : "M") + (x + radius * Math.sin(angle)).toFixed(1) + "," + (y - radius * Math.cos(angle)).toFixed(1);
    }
    return d + "Z";
  }
  function cross(x, y, r, turn) {  // a thick plus (or x) as one outline
    var w = r * 0.38, d = "";
    [[-w, -r], [w, -r], [w, -w], [r, -w], [r, w], [w, w], [w, r], [-w, r], [-w, w], [-r, w], [-r, -w], [-w, -w]].forEach(function (v, i) {
      var px = v[0] * Math.cos(turn) - v[1] * Math.sin(turn), py = v[0] * Math.sin(turn) + v[1] * Math.cos(turn);
      d += (i ? "L" : "M") + (x + px).toFixed(1) + "," + (y + py).toFixed(1);
    });
    return d + "Z";
  }
  var MARKERS = {
    circle: function (x, y, r) { return "M" + (x - r) + "," + y + "a" + r + "," + r + " 0 1,0 " + 2 * r + ",0a" + r + "," + r + " 0 1,0 " + -2 * r + ",0Z"; },
    square: function (x, y, r) { return polygon(x, y, r * 1.2, 4, Math.PI / 4); },
    triangle: function (x, y, r) { return polygon(x, y, r * 1.3, 3, 0); },
    diamond: function (x, y, r) { return polygon(x, y, r * 1.3, 4, 0); },
    "triangle-down": function (x, y, r) { return polygon(x, y, r * 1.3, 3, Math.PI); },
    plus: function (x, y, r) { return cross(x, y, r * 1.25, 0); },
    star: function (x, y, r) { return polygon(x, y, r * 1.45, 5, 0, 0.5); },
    hexagon: function (x, y, r) { return polygon(x, y, r * 1.15, 6, 0); },
    cross: function (x, y, r) { return cross(x, y, r * 1.25, Math.PI / 4); },
    bar: function (x, y, r) { var w = r * 1.5, h = r * 0.7; return "M" + (x - w) + "," + (y - h) + "H" + (x + w) + "V" + (y + h) + "H" + (x - w) + "Z"; }
  };
  function markerPath(shape, x, y, r) {
    return (MARKERS[shape] || MARKERS.circle)(+x.toFixed(1), +y.toFixed(1), r);
  }

  // The series' marker as a small SVG for a legend: the same shape, dash and colour as on the chart.
  function swatch(style) {
    var svg = el("svg", { width: 26, height: 14, viewBox: "0 0 26 14", "aria-hidden": "true", class: "series-swatch" });
    el("line", { x1: 1, x2: 25, y1: 7, y2: 7, stroke: style.colour, "stroke-width": 2, "stroke-dasharray": style.dash || "" }, svg);
    el("path", { d: markerPath(style.marker, 13, 7, 4), fill: style.colour, stroke: style.colour }, svg);
    return svg;
  }

  function fmt(value) {
    if (value === null || value === undefined) return "—";
    var abs = Math.abs(value);
    var digits = abs >= 1000 ? 0 : abs >= 100 ? 1 : 2;
    return value.toLocaleString("en-US", { maximumFractionDigits: digits });
  }

  function tickLabel(value) {
    var abs = Math.abs(value);
    if (abs >= 10000) return (value / 1000).toFixed(0) + "k";
    if (abs >= 1000) return (value / 1000).toFixed(1).replace(".0", "") + "k";
    if (Number.isInteger(value)) return String(value);
    return abs < 10 ? String(+value.toPrecision(3)) : value.toFixed(1).replace(/\.0$/, "");
  }

  function niceTicks(low, high, count) {
    if (high <= low) high = low + (Math.abs(low) || 1);
    var raw = (high - low) / count;
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 2.5, 5, 10].map(function (m) { return m * mag; }).find(function (s) { return s >= raw; });
    var ticks = [];
    for (var v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) ticks.push(+v.toFixed(10));
    return ticks;
  }

  function logTicks(low, high, base2) {
    var ticks = [];
    if (base2) {
      for (var e = Math.floor(Math.log2(low)); e <= Math.ceil(Math.log2(high)); e++) {
        var v = Math.pow(2, e);
        if (v >= low && v <= high) ticks.push(v);
      }
      while (ticks.length > 9) ticks = ticks.filter(function (_, i) { return i % 2 === 0; });
      return ticks;
    }
    for (var k = Math.floor(Math.log10(low)); k <= Math.ceil(Math.log10(high)); k++) {
      [1, 2, 5].forEach(function (m) {
        var t = m * Math.pow(10, k);
        if (t >= low && t <= high) ticks.push(t);
      });
    }
    if (ticks.length > 8) ticks = ticks.filter(function (t) { return Math.abs(Math.log10(t) % 1) < 1e-9; });
    return ticks;
  }

  function scale(low, high, start, end, log) {
    if (log) {
      var l0 = Math.log(low), l1 = Math.log(high);
      return function (v) { return start + (Math.log(v) - l0) / ((l1 - l0) || 1) * (end - start); };
    }
    return function (v) { return start + (v - low) / ((high - low) || 1) * (end - start); };
  }

  function domain(values, log, fromZero) {
    if (log) values = values.filter(function (v) { return v > 0; });
    if (!values.length) return [log ? 1 : 0, 1];
    var low = Math.min.apply(null, values), high = Math.max.apply(null, values);
    if (log) return [low / 1.25, high * 1.25];
    if (fromZero) low = Math.min(0, low);
    var pad = (high - low) * 0.06 || Math.abs(high) * 0.05 || 1;
    return [fromZero ? low : low - pad, high + pad];
  }

  function Chart(root) {
    this.root = root;
    this.spec = JSON.parse(document.getElementById(root.dataset.spec).textContent);
    this.hidden = {};
    this.logX = !!this.spec.x.log;
    this.logY = false;
    this.canvas = root.querySelector(".chart-canvas");
    this.tip = root.querySelector(".chart-tip");
    this.rows = root.querySelector("[data-chart-rows]");
    this.focusKey = null;  // the point that has the keyboard focus, kept across redraws
    var self = this;
    root.querySelectorAll("[data-log]").forEach(function (box) {
      box.checked = box.dataset.log === "x" ? self.logX : self.logY;
      box.addEventListener("change", function () {
        if (box.dataset.log === "x") self.logX = box.checked; else self.logY = box.checked;
        self.draw();
      });
    });
    var picker = root.dataset.picker ? document.getElementById(root.dataset.picker) : root;
    var status = picker.querySelector("[data-picker-status]");
    var redraw = function () {
      self.draw();
      var count = picker.querySelector("[data-plotting]");
      if (count) count.textContent = self.visible().length;
    };
    picker.querySelectorAll("[data-series-toggle]").forEach(function (box) {
      var style = self.styleOf(box.dataset.seriesToggle, box.dataset);
      var dot = box.parentNode.querySelector(".swatch");
      if (style && dot) dot.replaceWith(swatch(style));
      box.addEventListener("change", function () {
        var id = box.dataset.seriesToggle;
        self.hidden[id] = !box.checked;
        if (box.checked && box.dataset.seriesSrc && !self.has(id)) {
          self.load(box, status, redraw);  // a curve the page does not carry: from the public API
          return;
        }
        redraw();
      });
      self.hidden[box.dataset.seriesToggle] = !box.checked;
    });
    var timer;
    window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(function () { self.draw(); }, 120); });
    this.draw();
  }

  Chart.prototype.has = function (id) {
    return this.spec.series.some(function (s) { return s.id === id; });
  };

  // A series' colour, marker and dash: from the spec, else from the picker's data-series-* of a curve not loaded yet.
  Chart.prototype.styleOf = function (id, meta) {
    var known = this.spec.series.filter(function (s) { return s.id === id; })[0];
    if (known) return known;
    return meta.seriesColour ? { colour: meta.seriesColour, marker: meta.seriesMarker, dash: meta.seriesDash } : null;
  };

  // The rows of the chart's table for a series loaded after the page (the page's own series are rendered there).
  Chart.prototype.addRows = function (s) {
    if (!this.rows) return;
    var spec = this.spec, byConcurrency = spec.x.key === "concurrency", rows = this.rows;
    s.points.forEach(function (p) {
      var cells = [s.label, fmt(p.concurrency)];
      if (!byConcurrency) cells.push(fmt(p.x));
      cells.push(fmt(p.y));
      if (!byConcurrency) cells.push(p.on_front ? "yes" : "no");
      cells.push(p.verification);
      var tr = document.createElement("tr");
      cells.forEach(function (text) { var td = document.createElement("td"); td.textContent = text; tr.appendChild(td); });
      tr.dataset.series = s.id;
      rows.appendChild(tr);
    });
  };

  function number(value) {
    return typeof value === "number" && isFinite(value) ? value : null;
  }

  // The same series leaderboard/charts.py series_of() builds, from the public API's result detail
  // (/api/v1/public/results/<id>/: every measured point and the checker's Pareto front with its step vertices).
  Chart.prototype.seriesFrom = function (detail, meta) {
    var xKey = this.spec.x.key, yKey = this.spec.y.key, tooltip = this.spec.tooltip;
    var front = (detail.pareto || {})[xKey] || {};
    var onFront = {};
    (front.points || []).forEach(function (key) { onFront[key] = true; });
    var points = (detail.points || []).map(function (p) {
      var row = {};
      tooltip.forEach(function (metric) { row[metric.key] = number(p[metric.key]); });
      row.key = p.point || "";
      row.basis = p.basis || "";
      // The level the portal froze into the published point (checker.judge.verification): recomputed or claimed.
      row.verification = p.verification || (p.basis === "recomputed" ? "recomputed" : "claimed");
      row.verification_text = row.verification === "recomputed" ?
        "recomputed from its raw log" : "claimed: no raw log (waived), not recomputed";
      row.region = p.region || "";
      row.on_front = !!onFront[p.point];
      return row;
    }).filter(function (p) { return p[xKey] !== null && p[yKey] !== null; });
    points.forEach(function (p) { p.x = p[xKey]; p.y = p[yKey]; });
    var steps = (front.steps || []).filter(function (v) {
      return Array.isArray(v) && v.length === 2 && number(v[0]) !== null && number(v[1]) !== null;
    }).map(function (v) { return [v[0], v[1]]; });
    return { id: meta.seriesToggle, label: meta.seriesLabel, colour: meta.seriesColour, marker: meta.seriesMarker,
      dash: meta.seriesDash, href: meta.seriesHref, points: points, steps: steps };
  };

  Chart.prototype.load = function (box, status, done) {
    var self = this;
    box.disabled = true;
    if (status) status.textContent = "Loading " + box.dataset.seriesLabel + "…";
    fetch(box.dataset.seriesSrc, { headers: { Accept: "application/json" }, credentials: "omit" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (detail) {
        if (!self.has(box.dataset.seriesToggle)) {
          var loaded = self.seriesFrom(detail, box.dataset);
          self.spec.series.push(loaded);
          self.addRows(loaded);
        }
        if (status) status.textContent = "";
      })
      .catch(function (error) {
        box.checked = false;
        self.hidden[box.dataset.seriesToggle] = true;
        if (status) status.textContent = "Could not load " + box.dataset.seriesLabel + " (" + error.message + ").";
      })
      .then(function () {
        box.disabled = false;
        done();
      });
  };

  Chart.prototype.visible = function () {
    var hidden = this.hidden;
    return this.spec.series.filter(function (s) { return !hidden[s.id]; });
  };

  Chart.prototype.draw = function () {
    var spec = this.spec, xKey = spec.x.key, yKey = spec.y.key, self = this;
    var width = Math.max(300, Math.round(this.canvas.clientWidth || 720));
    var narrow = width < 560;
    var height = narrow ? Math.round(width * 0.9) : 440;
    var m = { left: narrow ? 50 : 68, right: 14, top: 14, bottom: narrow ? 46 : 52 };
    this.canvas.textContent = "";
    var series = this.visible();
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "group",
      "aria-label": spec.title + ": arrow keys move between the points, Escape closes their details; the table " +
      "under the chart has every value", "aria-roledescription": "chart", class: "step-chart" }, this.canvas);
    var xs = [], ys = [];
    series.forEach(function (s) {
      s.points.forEach(function (p) { xs.push(p[xKey]); ys.push(p[yKey]); });
      s.steps.forEach(function (v) { xs.push(v[0]); ys.push(v[1]); });
    });
    if (!xs.length) {
      el("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "empty" }, svg).textContent = "No series selected";
      return;
    }
    var dx = domain(xs, this.logX, false), dy = domain(ys, this.logY, true);
    var xt = this.logX ? logTicks(dx[0], dx[1], xKey === "concurrency") : niceTicks(dx[0], dx[1], narrow ? 4 : 6);
    var yt = this.logY ? logTicks(dy[0], dy[1], false) : niceTicks(dy[0], dy[1], 5);
    if (!this.logX && xt.length) { dx[0] = Math.min(dx[0], xt[0]); dx[1] = Math.max(dx[1], xt[xt.length - 1]); }
    if (!this.logY && yt.length) { dy[0] = Math.min(dy[0], yt[0]); dy[1] = Math.max(dy[1], yt[yt.length - 1]); }
    var left = m.left, right = width - m.right, top = m.top, bottom = height - m.bottom;
    var sx = scale(dx[0], dx[1], left, right, this.logX), sy = scale(dy[0], dy[1], bottom, top, this.logY);
    el("rect", { x: left, y: top, width: right - left, height: bottom - top, class: "plot-area" }, svg);
    xt.forEach(function (t) {
      var x = sx(t).toFixed(1);
      el("line", { x1: x, x2: x, y1: top, y2: bottom, class: "grid" }, svg);
      el("text", { x: x, y: bottom + 16, "text-anchor": "middle", class: "tick" }, svg).textContent = tickLabel(t);
    });
    yt.forEach(function (t) {
      var y = sy(t).toFixed(1);
      el("line", { x1: left, x2: right, y1: y, y2: y, class: "grid" }, svg);
      el("text", { x: left - 6, y: (+y + 4).toFixed(1), "text-anchor": "end", class: "tick" }, svg).textContent = tickLabel(t);
    });
    el("line", { x1: left, x2: right, y1: bottom, y2: bottom, class: "axis" }, svg);
    el("line", { x1: left, x2: left, y1: top, y2: bottom, class: "axis" }, svg);
    el("text", { x: (left + right) / 2, y: height - 8, "text-anchor": "middle", class: "axis-label" }, svg).textContent =
      spec.x.label + (this.logX ? " · log" : "");
    el("text", { transform: "translate(13 " + (top + bottom) / 2 + ") rotate(-90)", "text-anchor": "middle", class: "axis-label" }, svg).textContent =
      spec.y.label + (this.logY ? " · log" : "");
    var clip = el("clipPath", { id: spec.id + "-clip" }, el("defs", {}, svg));
    el("rect", { x: left - 6, y: top - 6, width: right - left + 12, height: bottom - top + 12 }, clip);
    var layer = el("g", { "clip-path": "url(#" + spec.id + "-clip)" }, svg);
    var targets = [];
    var ok = function (x, y) { return (!self.logX || x > 0) && (!self.logY || y > 0); };
    series.forEach(function (s) {  // every line first, then every marker above them
      var steps = s.steps.filter(function (v) { return ok(v[0], v[1]); });
      if (steps.length >= 2) {
        var d = steps.map(function (v, i) { return (i ? "L" : "M") + sx(v[0]).toFixed(1) + "," + sy(v[1]).toFixed(1); }).join(" ");
        el("path", { d: d, class: "step-line", stroke: s.colour, "stroke-dasharray": s.dash || "", "data-series": s.id }, layer);
      }
    });
    var rows = [];  // per series, its targets in x order: what the arrow keys walk
    series.forEach(function (s) {
      var row = [];
      s.points.slice().sort(function (a, b) { return a[xKey] - b[xKey]; }).forEach(function (p) {
        if (!ok(p[xKey], p[yKey])) return;
        var cx = sx(p[xKey]), cy = sy(p[yKey]);
        var node = el("path", { d: markerPath(s.marker, cx, cy, narrow ? 4 : 5), stroke: s.colour,
          fill: p.on_front ? s.colour : "#ffffff", class: "marker" + (p.on_front ? "" : " off-front"),
          "data-series": s.id, "data-point": p.key, tabindex: "-1", role: "img",
          "aria-label": self.describe(p, s) }, layer);
        var target = { x: cx, y: cy, point: p, series: s, node: node };
        targets.push(target);
        row.push(target);
      });
      if (row.length) rows.push(row);
    });
    series.forEach(function (s) {  // the first point past a performance cliff: a dashed line and "cliff"
      s.points.forEach(function (p) {
        if (!p.past_cliff || !ok(p[xKey], p[yKey])) return;
        var x = sx(p[xKey]).toFixed(1);
        el("line", { x1: x, x2: x, y1: top, y2: bottom, class: "cliff-line", "data-cliff": p.key }, layer);
        var nearRight = +x > right - 52;  // the label goes on the side with room
        var label = el("text", { x: (nearRight ? +x - 4 : +x + 4).toFixed(1), y: top + 14, class: "cliff-label",
          "text-anchor": nearRight ? "end" : "start" }, layer);
        label.textContent = "cliff ▼";
        el("circle", { cx: x, cy: sy(p[yKey]).toFixed(1), r: narrow ? 8 : 9, class: "cliff-ring" }, layer);
      });
    });
    var ring = el("circle", { r: 9, class: "hover-ring", visibility: "hidden" }, svg);
    var show = function (target) {
      ring.setAttribute("cx", target.x.toFixed(1));
      ring.setAttribute("cy", target.y.toFixed(1));
      ring.setAttribute("stroke", target.series.colour);
      ring.setAttribute("visibility", "visible");
      self.showTip(target, width);
    };
    // One tab stop (the focused point, else the first); arrow keys move the focus from point to point.
    var current = targets.filter(function (t) { return t.point.key === self.focusKey; })[0] || targets[0];
    if (current) current.node.setAttribute("tabindex", "0");
    var moveTo = function (target) {
      if (!target) return;
      targets.forEach(function (t) { t.node.setAttribute("tabindex", t === target ? "0" : "-1"); });
      target.node.focus();
    };
    targets.forEach(function (t) {
      t.node.addEventListener("focus", function () {
        self.focusKey = t.point.key;
        ring.classList.add("focus-ring");
        show(t);
      });
      t.node.addEventListener("blur", function () { ring.classList.remove("focus-ring"); self.hideTip(ring); });
    });
    svg.addEventListener("keydown", function (event) {
      var at = -1, row = -1;
      rows.forEach(function (r, i) { var j = r.indexOf(targets.filter(function (t) { return t.node === document.activeElement; })[0]); if (j >= 0) { row = i; at = j; } });
      if (row < 0) return;
      var next = null;
      if (event.key === "ArrowRight") next = rows[row][at + 1];
      else if (event.key === "ArrowLeft") next = rows[row][at - 1];
      else if (event.key === "Home") next = rows[row][0];
      else if (event.key === "End") next = rows[row][rows[row].length - 1];
      else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        var other = rows[row + (event.key === "ArrowDown" ? 1 : -1)];
        if (other) next = other[Math.min(at, other.length - 1)];
      } else if (event.key === "Escape") { self.hideTip(ring); event.preventDefault(); return; }
      else if (event.key === "Enter" || event.key === " ") { show(rows[row][at]); event.preventDefault(); return; }
      else return;
      event.preventDefault();
      moveTo(next);
    });
    var hover = function (event) {
      var box = svg.getBoundingClientRect();
      var px = (event.touches ? event.touches[0].clientX : event.clientX) - box.left;
      var py = (event.touches ? event.touches[0].clientY : event.clientY) - box.top;
      var best = null, bestD = 30 * 30;
      targets.forEach(function (t) {
        var d = (t.x - px) * (t.x - px) + (t.y - py) * (t.y - py);
        if (d < bestD) { bestD = d; best = t; }
      });
      if (!best) { self.hideTip(ring); return; }
      show(best);
    };
    this.escape = function () { self.hideTip(ring); };
    svg.addEventListener("mousemove", hover);
    svg.addEventListener("click", hover);
    svg.addEventListener("touchstart", hover, { passive: true });
    svg.addEventListener("mouseleave", function () { self.hideTip(ring); });
  };

  // What a screen reader says of a point: its series and every metric, as the tooltip shows them.
  Chart.prototype.describe = function (p, s) {
    var parts = this.spec.tooltip.map(function (metric) { return metric.label + " " + fmt(p[metric.key]); });
    return s.label + ": " + parts.join(", ") + "; " + (p.verification_text || "") +
      (p.on_front ? "" : "; not on the Pareto front") + (p.past_cliff ? "; " + p.cliff_text : "");
  };

  Chart.prototype.showTip = function (target, width) {
    var tip = this.tip, p = target.point, s = target.series;
    tip.textContent = "";
    var head = document.createElement("strong");
    head.appendChild(swatch(s));
    head.appendChild(document.createTextNode(" " + s.label));
    tip.appendChild(head);
    var list = document.createElement("dl");
    this.spec.tooltip.forEach(function (metric) {
      // A figure the point does not have is left out of the details (the table below says "—" for it).
      if (p[metric.key] === null || p[metric.key] === undefined || Number.isNaN(p[metric.key])) return;
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = metric.label;
      dd.textContent = fmt(p[metric.key]);
      list.appendChild(dt);
      list.appendChild(dd);
    });
    tip.appendChild(list);
    var foot = document.createElement("div");
    foot.className = "muted";
    foot.textContent = (p.verification_text || "") + (p.on_front ? "" : " · not on the Pareto front") +
      (p.past_cliff ? " · " + p.cliff_text : "") +
      (p.region ? " · " + p.region.replace(/_/g, " ") : "");
    tip.appendChild(foot);
    tip.hidden = false;
    // A narrow chart (a phone, a chart in a grid column) docks its details beneath the plot: they never cover it.
    // A wide one shows them beside the point, on the side with more room, inside the chart, never over the point.
    var docked = width < DOCK_BELOW_PX;
    tip.classList.toggle("docked", docked);
    if (docked) {
      tip.style.left = "";
      tip.style.top = "";
    } else {
      var height = this.root.querySelector("svg").getBoundingClientRect().height;
      var left = target.x > width / 2 ? target.x - tip.offsetWidth - 16 : target.x + 16;
      left = Math.max(0, Math.min(width - tip.offsetWidth, left));
      var top = Math.max(0, Math.min(height - tip.offsetHeight, target.y - tip.offsetHeight / 2));
      tip.style.left = left + "px";
      tip.style.top = top + "px";
    }
    tip.setAttribute("data-point", p.key);
  };

  Chart.prototype.hideTip = function (ring) {
    this.tip.hidden = true;
    ring.setAttribute("visibility", "hidden");
  };

  function start() {
    document.querySelectorAll("[data-chart]").forEach(function (root) { root.chart = new Chart(root); });
    // Escape closes any chart's details, wherever the focus is (WCAG 1.4.13: content on hover is dismissable).
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Escape") return;
      document.querySelectorAll("[data-chart]").forEach(function (root) { if (root.chart.escape) root.chart.escape(); });
    });
    var compare = document.querySelector("[data-compare-form]");
    if (compare) {
      var update = function () {
        var n = compare.querySelectorAll("input[name=ids]:checked").length;
        compare.querySelector("button[type=submit]").disabled = n < 2 || n > 4;
        compare.querySelector("[data-compare-count]").textContent = n;
      };
      compare.addEventListener("change", update);
      update();
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
