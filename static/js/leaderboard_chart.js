/* Leaderboard charts: our own SVG, no library, no network. Each [data-chart] element names a JSON spec
   (leaderboard/charts.py) and gets a step chart through measured points only (the vertices come from the
   server: nothing is interpolated here), hover/tap details of the nearest point with every metric, series
   toggles and log axes. The table beside each chart carries the same numbers without JavaScript. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
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
    return { id: meta.seriesToggle, label: meta.seriesLabel, colour: meta.seriesColour, href: meta.seriesHref,
      points: points, steps: steps };
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
        if (!self.has(box.dataset.seriesToggle)) self.spec.series.push(self.seriesFrom(detail, box.dataset));
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
    var svg = el("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img",
      "aria-label": spec.title + " (the table beside the chart has every value)", class: "step-chart" }, this.canvas);
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
        el("path", { d: d, class: "step-line", stroke: s.colour, "data-series": s.id }, layer);
      }
    });
    series.forEach(function (s) {
      s.points.forEach(function (p) {
        if (!ok(p[xKey], p[yKey])) return;
        var cx = sx(p[xKey]), cy = sy(p[yKey]);
        el("circle", { cx: cx.toFixed(1), cy: cy.toFixed(1), r: narrow ? 4 : 5, stroke: s.colour,
          fill: p.on_front ? s.colour : "#ffffff", class: "marker" + (p.on_front ? "" : " off-front"),
          "data-series": s.id, "data-point": p.key }, layer);
        targets.push({ x: cx, y: cy, point: p, series: s });
      });
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
      ring.setAttribute("cx", best.x.toFixed(1));
      ring.setAttribute("cy", best.y.toFixed(1));
      ring.setAttribute("stroke", best.series.colour);
      ring.setAttribute("visibility", "visible");
      self.showTip(best, width);
    };
    svg.addEventListener("mousemove", hover);
    svg.addEventListener("click", hover);
    svg.addEventListener("touchstart", hover, { passive: true });
    svg.addEventListener("mouseleave", function () { self.hideTip(ring); });
  };

  Chart.prototype.showTip = function (target, width) {
    var tip = this.tip, p = target.point, s = target.series;
    tip.textContent = "";
    var head = document.createElement("strong");
    head.textContent = s.label;
    head.style.color = s.colour;
    tip.appendChild(head);
    var list = document.createElement("dl");
    this.spec.tooltip.forEach(function (metric) {
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
    var left = target.x + 14;
    if (left + tip.offsetWidth > width) left = Math.max(0, target.x - tip.offsetWidth - 14);
    tip.style.left = left + "px";
    tip.style.top = Math.max(0, target.y - 20) + "px";
    tip.setAttribute("data-point", p.key);
  };

  Chart.prototype.hideTip = function (ring) {
    this.tip.hidden = true;
    ring.setAttribute("visibility", "hidden");
  };

  function start() {
    document.querySelectorAll("[data-chart]").forEach(function (root) { root.chart = new Chart(root); });
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
