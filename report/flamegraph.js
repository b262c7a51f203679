// flamegraph.js - the interactive part of luaprof's SVG flame graphs
// (report/out_flamegraph.c embeds it; nothing is fetched).
//
// Every frame is a <g class="f"> holding a <title> ("NAME (N samples,
// P%)"), a <rect> and a <text> label.  Click a frame to zoom to it (its
// ancestors stretch to the full width, greyed; other frames hide); click
// "Reset Zoom" or press Escape to go back.  "Search" (or Ctrl-F, or /)
// asks for a regular expression, paints matching frames magenta and
// shows the share of samples under them ("Matched: P%": of the zoomed
// frame when zoomed).  Labels are cut to fit with "..".
"use strict";
var fg = {};

function fgInit() {
	var svg = document.getElementById("luaprof-flamegraph");
	if (!svg || fg.svg)
		return;
	fg.svg = svg;
	fg.width = +svg.getAttribute("data-width");
	fg.xpad = +svg.getAttribute("data-xpad");
	fg.inverted = svg.getAttribute("data-inverted") === "1";
	fg.charw = +svg.getAttribute("data-charw");
	fg.frames = Array.prototype.slice.call(svg.querySelectorAll("g.f"));
	fg.details = document.getElementById("details");
	fg.matched = document.getElementById("matched");
	fg.unzoom = document.getElementById("unzoom");
	fg.zoomed = null;
	fg.term = null;
	fg.frames.forEach(function (g) {
		var r = g.querySelector("rect"), t = g.querySelector("title").textContent;
		g.fgRect = r;
		g.fgText = g.querySelector("text");
		g.fgX = +r.getAttribute("x");
		g.fgW = +r.getAttribute("width");
		g.fgY = +r.getAttribute("y");
		g.fgFill = r.getAttribute("fill");
		g.fgInfo = t;
		// "NAME (N samples, P%)": the name is all before the last " (".
		g.fgName = t.substring(0, t.lastIndexOf(" ("));
		g.addEventListener("click", function (e) { e.stopPropagation(); fgZoom(g); });
		g.addEventListener("mouseover", function () { fg.details.textContent = g.fgInfo; });
		g.addEventListener("mouseout", function () { fg.details.textContent = " "; });
	});
	fg.unzoom.addEventListener("click", fgReset);
	document.getElementById("search").addEventListener("click", fgAsk);
	window.addEventListener("keydown", function (e) {
		if ((e.ctrlKey && e.key === "f") || e.key === "/") {
			e.preventDefault();
			fgAsk();
		} else if (e.key === "Escape") {
			fgReset();
			fgSearch(null);
		}
	});
}

function fgLabel(g, w) {
	var n = Math.floor((w - 6) / fg.charw), name = g.fgName;
	if (n < 3)
		g.fgText.textContent = "";
	else if (name.length <= n)
		g.fgText.textContent = name;
	else
		g.fgText.textContent = name.substring(0, n - 2) + "..";
}

function fgPlace(g, x, w) {
	g.style.display = "";
	g.fgRect.setAttribute("x", x.toFixed(2));
	g.fgRect.setAttribute("width", w.toFixed(2));
	g.fgText.setAttribute("x", (x + 3).toFixed(2));
	fgLabel(g, w);
}

function fgZoom(z) {
	var eps = 0.0001, full = fg.width - 2 * fg.xpad, ratio = full / z.fgW;
	fg.zoomed = z;
	fg.frames.forEach(function (g) {
		var above = fg.inverted ? g.fgY < z.fgY : g.fgY > z.fgY;
		g.classList.remove("parent");
		if (above) {
			// An ancestor covers the zoomed frame's whole range.
			if (g.fgX <= z.fgX + eps && g.fgX + g.fgW >= z.fgX + z.fgW - eps) {
				g.classList.add("parent");
				fgPlace(g, fg.xpad, full);
			} else {
				g.style.display = "none";
			}
		} else if (g.fgX >= z.fgX - eps && g.fgX + g.fgW <= z.fgX + z.fgW + eps) {
			fgPlace(g, fg.xpad + (g.fgX - z.fgX) * ratio, g.fgW * ratio);
		} else {
			g.style.display = "none";
		}
	});
	fg.unzoom.classList.remove("hide");
	fgSearch(fg.term);
}

function fgReset() {
	fg.zoomed = null;
	fg.frames.forEach(function (g) {
		g.classList.remove("parent");
		fgPlace(g, g.fgX, g.fgW);
	});
	fg.unzoom.classList.add("hide");
	fgSearch(fg.term);
}

function fgAsk() {
	var term = window.prompt("Search for (a regular expression):", fg.term || "");
	if (term !== null)
		fgSearch(term === "" ? null : term);
}

// Paints the frames whose name matches `term` and shows the share of
// samples under any of them: the union of their ranges, nested matches
// counted once.
function fgSearch(term) {
	var re = null, spans = [], lo = fg.xpad, hi = fg.width - fg.xpad, sum = 0, end = -1;
	if (term) {
		try {
			re = new RegExp(term);
		} catch (e) {
			fg.matched.textContent = "bad regular expression";
			return;
		}
	}
	fg.term = re ? term : null;
	if (fg.zoomed) {
		lo = fg.zoomed.fgX;
		hi = fg.zoomed.fgX + fg.zoomed.fgW;
	}
	fg.frames.forEach(function (g) {
		var hit = re !== null && re.test(g.fgName);
		g.fgRect.setAttribute("fill", hit ? "rgb(230,0,230)" : g.fgFill);
		g.classList.toggle("match", hit);
		if (hit && g.fgX >= lo - 0.0001 && g.fgX + g.fgW <= hi + 0.0001)
			spans.push([g.fgX, g.fgX + g.fgW]);
	});
	if (!re) {
		fg.matched.textContent = " ";
		return;
	}
	spans.sort(function (a, b) { return a[0] - b[0]; });
	spans.forEach(function (s) {
		if (s[0] >= end) {
			sum += s[1] - s[0];
			end = s[1];
		} else if (s[1] > end) {
			sum += s[1] - end;
			end = s[1];
		}
	});
	fg.matched.textContent = "Matched: " + (100 * sum / (hi - lo)).toFixed(1) + "%";
}

if (document.readyState === "loading")
	document.addEventListener("DOMContentLoaded", fgInit);
else
	fgInit();
window.addEventListener("load", fgInit);
