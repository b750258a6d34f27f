// Waterline timeline: one crosshair across every lane, and drag-to-zoom.
// The lanes are server-rendered SVG; this script only reads their data-
// attributes (window bounds, the URL of the current view) and navigates.
// Zooming goes through htmx (hx-push-url) when it is loaded, so the URL,
// back/forward and shared links always reproduce the view; without htmx
// it is a plain page load of the same URL.
(function () {
  "use strict";

  // The pages' Content-Security-Policy allows scripts from this site only,
  // without eval: htmx must not evaluate attribute code (hx-on, js: values,
  // trigger filters) nor run scripts in swapped content, and injects no
  // style element of its own. No template relies on any of these.
  if (window.htmx) {
    htmx.config.allowEval = false;
    htmx.config.allowScriptTags = false;
    htmx.config.includeIndicatorStyles = false;
    // Error answers are swapped too: the server sends them to the
    // layout's #htmx-error region (pages.go, RenderError). By default htmx
    // drops 4xx/5xx, and a refused request did nothing on screen.
    htmx.config.responseHandling = [
      {code: "204", swap: false},
      {code: "[23]..", swap: true},
      {code: "[45]..", swap: true, error: true},
      {code: "...", swap: false}
    ];
    // A request the user made clears the last error; polls do not (one
    // every 2 s would hide it at once). An error a poll put there goes
    // once a poll succeeds again: the database is back, and the lists it
    // reloaded are current.
    var polls = function (elt) {
      return /every /.test((elt && elt.getAttribute && elt.getAttribute("hx-trigger")) || "");
    };
    // (A poll that swapped itself out reports its end from an ancestor:
    // the request remembers what asked.)
    document.addEventListener("htmx:beforeRequest", function (ev) {
      var poll = polls(ev.detail.elt), box = document.getElementById("htmx-error");
      if (ev.detail.xhr) { ev.detail.xhr.wlPoll = poll; }
      if (box && !poll) { box.replaceChildren(); delete box.dataset.poll; }
    });
    // A tab in the background does not poll (a shift leaves many open,
    // a pending analysis asks every 2 s); shown again, its polls ask at
    // once (their hx-trigger has wl-shown).
    document.addEventListener("htmx:beforeRequest", function (ev) {
      if (document.hidden && polls(ev.detail.elt)) { ev.preventDefault(); }
    });
    document.addEventListener("visibilitychange", function () {
      if (document.hidden) { return; }
      document.querySelectorAll("[hx-trigger*='wl-shown']").forEach(function (el) { htmx.trigger(el, "wl-shown"); });
    });
    document.addEventListener("htmx:afterRequest", function (ev) {
      var box = document.getElementById("htmx-error");
      if (!box) { return; }
      if (!(ev.detail.xhr ? ev.detail.xhr.wlPoll : polls(ev.detail.elt))) { delete box.dataset.poll; return; }
      if (!ev.detail.successful) {
        if (box.childElementCount) { box.dataset.poll = "1"; }
      } else if (box.dataset.poll) {
        box.replaceChildren();
        delete box.dataset.poll;
      }
    });
    // A poll that never reached the server (Waterline restarting, the
    // network gone) says so: the page would otherwise go on showing what
    // it last loaded as if it were current. A poll that succeeds again
    // clears it (above).
    ["htmx:sendError", "htmx:timeout"].forEach(function (name) {
      document.addEventListener(name, function (ev) {
        var box = document.getElementById("htmx-error");
        if (!box || !(ev.detail.xhr ? ev.detail.xhr.wlPoll : polls(ev.detail.elt))) { return; }
        var msg = document.createElement("div");
        msg.className = "banner err";
        msg.setAttribute("role", "alert");
        msg.dataset.testid = "error";
        msg.textContent = "Cannot reach Waterline: this page shows what it last loaded. Trying again…";
        box.replaceChildren(msg);
        box.dataset.poll = "1";
      });
    });
    // The lazy region's load that never reached the server (offline, the
    // connection cut) gets no error answer to retry from: ask again in a
    // few seconds. Answers that are errors come back as the region itself,
    // with the reason and its own retry (pages.go, lazyRetry).
    ["htmx:sendError", "htmx:timeout"].forEach(function (name) {
      document.addEventListener(name, function (ev) {
        var el = ev.detail.elt;
        if (!el || !el.hasAttribute || !el.hasAttribute("data-lazy-retry")) { return; }
        setTimeout(function () {
          if (document.contains(el)) { htmx.trigger(el, "wl-retry"); }
        }, 5000);
      });
    });
  }

  function timeline(el) { return el && el.closest ? el.closest(".tl") : null; }

  // frac is the horizontal position of a mouse event within the plot area
  // of the timeline, 0..1.
  function frac(tl, ev) {
    var ov = tl.querySelector(".tl-overlay");
    var r = ov.getBoundingClientRect();
    var f = (ev.clientX - r.left) / r.width;
    return Math.max(0, Math.min(1, f));
  }

  function fmt(ms) {
    return new Date(ms).toISOString().slice(11, 19) + " UTC";
  }

  function timeAt(tl, f) {
    var from = Number(tl.dataset.from), to = Number(tl.dataset.to);
    return from + f * (to - from);
  }

  // go loads url into the timeline's target region, pushing it to the
  // history; one persistent hidden link carries the htmx attributes.
  function go(tl, url) {
    var target = tl.dataset.target;
    if (!window.htmx || !target) { window.location.assign(url); return; }
    var a = document.getElementById("tl-go");
    if (!a) {
      a = document.createElement("a");
      a.id = "tl-go";
      a.hidden = true;
      document.body.appendChild(a);
    }
    a.setAttribute("hx-get", url);
    a.setAttribute("hx-target", target);
    a.setAttribute("hx-select", target);
    a.setAttribute("hx-swap", "outerHTML");
    a.setAttribute("hx-push-url", "true");
    a.setAttribute("hx-indicator", target);
    window.htmx.process(a);
    window.htmx.trigger(a, "click");
  }

  function zoomURL(tl, t0, t1) {
    var u = new URL(tl.dataset.url, window.location.href);
    u.searchParams.set("from", new Date(Math.floor(t0 / 1000) * 1000).toISOString().replace(".000Z", "Z"));
    u.searchParams.set("to", new Date(Math.ceil(t1 / 1000) * 1000).toISOString().replace(".000Z", "Z"));
    u.searchParams.delete("page");
    return u.pathname + u.search;
  }

  // points parses a lane path ("M x y l dx dy dx dy … M …") into absolute
  // [x, y] pairs, cached on the element.
  function points(path) {
    if (path._pts) return path._pts;
    var out = [], x = 0, y = 0, rel = false;
    var toks = (path.getAttribute("d") || "").match(/[MLlZz]|-?\d+(?:\.\d+)?/g) || [];
    for (var i = 0; i < toks.length; i++) {
      var t = toks[i];
      if (t === "M" || t === "L") { rel = false; continue; }
      if (t === "l") { rel = true; continue; }
      if (t === "Z" || t === "z") break;
      var a = Number(t), b = Number(toks[++i]);
      if (rel) { x += a; y += b; } else { x = a; y = b; }
      out.push([x, y]);
    }
    path._pts = out;
    return out;
  }

  function fmtVal(v, unit) {
    var s = Math.abs(v) >= 100 ? Math.round(v).toLocaleString("en") : (Math.round(v * 10) / 10).toString();
    return s + " " + unit;
  }

  // stepValue is a series' value at time t from its data-v (values on
  // the step grid): null where it has none, undefined without data-v.
  function stepValue(tl, p, t) {
    var raw = p.getAttribute("data-v"), step = Number(tl.dataset.step);
    if (!raw || !step) return undefined;
    if (!p._v) p._v = raw.split(",");
    var i = Math.round(t / step) - Number(p.getAttribute("data-v0") || 0);
    if (i < 0 || i >= p._v.length || p._v[i] === "") return null;
    return Number(p._v[i]);
  }

  // values lists, for every drawn lane, each series' value at fraction f
  // of the window: the series' own value on its step grid, else read
  // back from the lane's path and scale (to a pixel's precision).
  function values(tl, f) {
    var lines = [], t = timeAt(tl, f);
    tl.querySelectorAll("svg[data-ymax]").forEach(function (svg) {
      var ymax = Number(svg.dataset.ymax), h = Number(svg.getAttribute("height"));
      var parts = [], more = 0;
      svg.querySelectorAll("path[data-n]").forEach(function (p) {
        if (p.classList.contains("area")) return;
        var sv = stepValue(tl, p, t);
        if (sv === null) return;
        if (parts.length >= 4) { more++; return; }
        if (sv !== undefined) { parts.push(p.dataset.n + " " + fmtVal(sv, svg.dataset.unit)); return; }
        var pts = points(p), x = f * 1000, best = null;
        for (var i = 0; i < pts.length; i++) {
          if (best === null || Math.abs(pts[i][0] - x) < Math.abs(best[0] - x)) best = pts[i];
        }
        if (!best || Math.abs(best[0] - x) > 15) return;
        var v = (h - 2 - best[1]) / (h - 4) * ymax;
        // A line over a scale fitted to another model is drawn at the top.
        var val = p.hasAttribute("data-clipped") && v >= ymax * 0.999 ? "above " + fmtVal(ymax, svg.dataset.unit) : fmtVal(v, svg.dataset.unit);
        parts.push(p.dataset.n + " " + val);
      });
      if (more) parts.push("+" + more + " more");
      if (parts.length) lines.push(svg.dataset.lane + ": " + parts.join(" · "));
    });
    return lines;
  }

  var drag = null; // {tl, f0}

  document.addEventListener("mousemove", function (ev) {
    var tl = drag ? drag.tl : timeline(ev.target);
    document.querySelectorAll(".tl-cross, .tl-tip").forEach(function (c) {
      if (!tl || !tl.contains(c) || (!drag && !ev.target.closest(".tl-plot"))) c.style.display = "none";
    });
    if (!tl || (!drag && !ev.target.closest(".tl-plot"))) return;
    var f = frac(tl, ev);
    var cross = tl.querySelector(".tl-cross");
    cross.style.display = "block";
    cross.style.left = (f * 100) + "%";
    cross.firstElementChild.textContent = fmt(timeAt(tl, f));
    var tip = tl.querySelector(".tl-tip");
    if (tip && !drag) {
      var lines = values(tl, f);
      tip.textContent = lines.join("\n");
      tip.style.display = lines.length ? "block" : "none";
      var left = f < 0.6;
      tip.style.left = left ? "calc(" + (f * 100) + "% + 12px)" : "";
      tip.style.right = left ? "" : "calc(" + ((1 - f) * 100) + "% + 12px)";
      var plot = ev.target.closest(".tl-plot"), ov = tl.querySelector(".tl-overlay");
      if (plot && ov) tip.style.top = Math.max(0, ev.clientY - ov.getBoundingClientRect().top + 14) + "px";
    }
    if (drag) {
      var sel = tl.querySelector(".tl-sel");
      var a = Math.min(drag.f0, f), b = Math.max(drag.f0, f);
      sel.style.display = "block";
      sel.style.left = (a * 100) + "%";
      sel.style.width = ((b - a) * 100) + "%";
    }
  });

  document.addEventListener("mousedown", function (ev) {
    if (ev.button !== 0) return;
    var plot = ev.target.closest(".tl-plot");
    var tl = timeline(plot);
    if (!tl || ev.target.closest("a")) return;
    ev.preventDefault();
    drag = { tl: tl, f0: frac(tl, ev), x0: ev.clientX };
  });

  document.addEventListener("mouseup", function (ev) {
    if (!drag) return;
    var d = drag;
    drag = null;
    d.tl.querySelector(".tl-sel").style.display = "none";
    if (Math.abs(ev.clientX - d.x0) < 6) return; // a click, not a drag
    var f = frac(d.tl, ev);
    var t0 = timeAt(d.tl, Math.min(d.f0, f)), t1 = timeAt(d.tl, Math.max(d.f0, f));
    if (t1 - t0 < 60000) t1 = t0 + 60000; // at least a minute
    go(d.tl, zoomURL(d.tl, t0, t1));
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && drag) {
      drag.tl.querySelector(".tl-sel").style.display = "none";
      drag = null;
    }
  });

  // Relative times ("4 min ago", <time data-ago>) move on while the page
  // stays open: the server's clock when it wrote them (data-now), plus
  // the time since the browser got them.
  function agoText(d) {
    if (d < 60000) return "just now";
    if (d < 3600000) return Math.floor(d / 60000) + " min ago";
    if (d < 48 * 3600000) return Math.floor(d / 3600000) + " h ago";
    return Math.floor(d / 86400000) + " days ago";
  }
  function ages(root) {
    (root && root.querySelectorAll ? root : document).querySelectorAll("time[data-ago]").forEach(function (el) {
      if (!el._t0) el._t0 = Date.now();
      var at = Date.parse(el.dateTime), now = Number(el.dataset.now);
      if (isNaN(at) || isNaN(now)) return;
      el.textContent = agoText(now + Date.now() - el._t0 - at);
    });
  }
  document.addEventListener("DOMContentLoaded", function () { ages(document); });
  document.addEventListener("htmx:load", function (ev) { ages(ev.target); });
  document.addEventListener("visibilitychange", function () { if (!document.hidden) ages(document); });
  setInterval(function () { if (!document.hidden) ages(document); }, 30000);

  // Forms that change something for everyone (Resolve) ask first.
  document.addEventListener("submit", function (ev) {
    var f = ev.target.closest("form[data-confirm]");
    if (f && !window.confirm(f.dataset.confirm)) ev.preventDefault();
  }, true);

  // Copy buttons (share link).
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest("[data-copy]");
    if (!b) return;
    var input = document.getElementById(b.dataset.copy);
    if (!input) return;
    input.select();
    if (navigator.clipboard) navigator.clipboard.writeText(input.value);
    b.textContent = "Copied";
  });

  // Latency heatmap of the samples: cells drawn from one data attribute;
  // a brushed box asks the server to compare those requests with the rest
  // of the window (BubbleUp).
  function drawHeat(c, box) {
    var ctx = c.getContext("2d"), cols = Number(c.dataset.cols), rows = Number(c.dataset.rows);
    var cells = c.dataset.cells || "", w = c.width / cols, h = c.height / rows;
    ctx.clearRect(0, 0, c.width, c.height);
    for (var r = 0; r < rows; r++) {
      for (var k = 0; k < cols; k++) {
        var lvl = cells.charCodeAt(r * cols + k) - 48;
        if (lvl > 0) {
          ctx.fillStyle = "rgba(0, 86, 140, " + (0.12 + 0.88 * lvl / 9) + ")";
          ctx.fillRect(k * w, r * h, Math.ceil(w), Math.ceil(h));
        }
      }
    }
    var lo = Number(c.dataset.lo), hi = Number(c.dataset.hi), slow = Number(c.dataset.slow);
    if (slow > lo && slow < hi) {
      var y = c.height * (1 - Math.log(slow / lo) / Math.log(hi / lo));
      ctx.strokeStyle = "#a64a00"; ctx.setLineDash([6, 4]); ctx.beginPath();
      ctx.moveTo(0, y); ctx.lineTo(c.width, y); ctx.stroke(); ctx.setLineDash([]);
    }
    if (box) {
      ctx.strokeStyle = "#a64a00"; ctx.lineWidth = 2;
      ctx.strokeRect(box[0], box[1], box[2] - box[0], box[3] - box[1]);
      ctx.fillStyle = "rgba(230, 159, 0, 0.18)";
      ctx.fillRect(box[0], box[1], box[2] - box[0], box[3] - box[1]);
      ctx.lineWidth = 1;
    }
  }

  function heatAll(root) {
    (root || document).querySelectorAll("canvas.heat-c").forEach(function (c) { drawHeat(c); });
  }
  document.addEventListener("DOMContentLoaded", function () { heatAll(document); });
  document.addEventListener("htmx:load", function (ev) { heatAll(ev.target); });

  // On a narrow screen the timeline scrolls sideways; it opens on the
  // onset, not on the window's first hours.
  function showOnset(root) {
    var box = root.querySelector ? root.querySelector("#timeline") : null;
    if (!box || box.scrollWidth <= box.clientWidth) return;
    var onset = box.querySelector(".tl-onset");
    if (!onset) return;
    var x = onset.getBoundingClientRect().left - box.getBoundingClientRect().left + box.scrollLeft;
    box.scrollLeft = Math.max(0, x - box.clientWidth / 2);
  }
  document.addEventListener("DOMContentLoaded", function () { showOnset(document); });
  document.addEventListener("htmx:load", function (ev) { showOnset(ev.target.id === "timeline" ? ev.target.parentNode || document : ev.target); });

  var brush = null; // {c, x0, y0, box}
  function canvasXY(c, ev) {
    var r = c.getBoundingClientRect();
    return [Math.max(0, Math.min(c.width, (ev.clientX - r.left) * c.width / r.width)),
      Math.max(0, Math.min(c.height, (ev.clientY - r.top) * c.height / r.height))];
  }
  // Pointer events: a finger brushes the heatmap as a mouse does (its
  // canvas takes touches for itself: touch-action none).
  document.addEventListener("pointerdown", function (ev) {
    var c = ev.target.closest && ev.target.closest("canvas.heat-c");
    if (!c || ev.button !== 0) return;
    ev.preventDefault();
    var p = canvasXY(c, ev);
    brush = { c: c, x0: p[0], y0: p[1], box: null };
  });
  document.addEventListener("pointermove", function (ev) {
    if (!brush) return;
    var p = canvasXY(brush.c, ev);
    brush.box = [Math.min(brush.x0, p[0]), Math.min(brush.y0, p[1]), Math.max(brush.x0, p[0]), Math.max(brush.y0, p[1])];
    drawHeat(brush.c, brush.box);
  });
  document.addEventListener("pointercancel", function () {
    if (brush) { drawHeat(brush.c); brush = null; }
  });
  document.addEventListener("pointerup", function () {
    if (!brush) return;
    var b = brush; brush = null;
    if (!b.box || b.box[2] - b.box[0] < 3 || b.box[3] - b.box[1] < 3) { drawHeat(b.c); return; }
    var c = b.c, from = Number(c.dataset.from), to = Number(c.dataset.to);
    var lo = Number(c.dataset.lo), hi = Number(c.dataset.hi);
    var t = function (x) { return Math.round(from + (to - from) * x / c.width); };
    var ms = function (y) { return lo * Math.pow(hi / lo, 1 - y / c.height); };
    var sel = [t(b.box[0]), t(b.box[2]), ms(b.box[3]).toFixed(1), ms(b.box[1]).toFixed(1)].join(",");
    var u = new URL(c.dataset.url, window.location.href);
    u.searchParams.set("hsel", sel);
    if (window.htmx) window.htmx.ajax("GET", u.pathname + u.search, { target: "#bubbleup", swap: "outerHTML" });
  });
})();
