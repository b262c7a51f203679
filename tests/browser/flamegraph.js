// flamegraph.js - opens a luaprof flame graph (SVG) in headless Chromium
// and uses it as a person would: it reads the frames' names, searches for
// a regular expression through the Search button (answering its prompt),
// clicks a frame to zoom, then Reset Zoom.  Prints what the page shows,
// one "key=value" line each, for tests/e2e/views.sh to check:
//
//   usage: node flamegraph.js FILE.svg SEARCH ZOOM [SCREENSHOT.png]
//
//   frames=N             <g class="f"> elements
//   name=NAME            each distinct frame name (from the <title>s)
//   matched=TEXT         the "Matched: P%" text after searching SEARCH
//   matches=N bad=N      frames painted as matches; of them, not SEARCH
//   zoom=NAME            the frame clicked: the first named ZOOM...
//   zoom_x=X zoom_w=W    ...its rect once zoomed (full width: 10, 1180)
//   zoom_hidden=N        frames hidden by the zoom (not its stack)
//   zoom_kids=N          frames drawn above it, all within its width
//   unzoom=0|1           whether Reset Zoom shows
//   reset_hidden=N       frames still hidden after Reset Zoom
"use strict";
const { run } = require("./chromium.js");

const [file, search, zoom, shot] = process.argv.slice(2);

run(async (browser) => {
	const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.goto("file://" + require("path").resolve(file));
	await page.waitForFunction(() => window.fg && window.fg.frames);
	const names = await page.$$eval("g.f > title", (ts) =>
		[...new Set(ts.map((t) => t.textContent.replace(/ \([^(]*\)$/, "")))]);
	console.log("frames=" + await page.$$eval("g.f", (gs) => gs.length));
	for (const n of names)
		console.log("name=" + n);

	page.once("dialog", (d) => d.accept(search));
	await page.click("#search");
	await page.waitForFunction(() => /Matched/.test(document.getElementById("matched").textContent));
	console.log("matched=" + await page.textContent("#matched"));
	const m = await page.$$eval("g.f.match > title", (ts) => ts.map((t) => t.textContent));
	const re = new RegExp(search);
	console.log("matches=" + m.length + " bad=" + m.filter((t) => !re.test(t)).length);
	if (shot)
		await page.screenshot({ path: shot });

	// Zoom on the widest frame named ZOOM...
	const target = await page.evaluate((z) => {
		let best = -1;
		fg.frames.forEach((g, i) => {
			if (g.fgName.startsWith(z) && (best < 0 || g.fgW > fg.frames[best].fgW))
				best = i;
		});
		return best;
	}, zoom);
	if (target < 0)
		throw new Error("no frame named " + zoom);
	const g = page.locator("g.f").nth(target);
	console.log("zoom=" + await g.locator("title").textContent());
	await g.locator("rect").click({ force: true });
	const z = await page.evaluate((i) => {
		const t = fg.frames[i], r = t.fgRect, lo = t.fgX, hi = t.fgX + t.fgW;
		let hidden = 0, kids = 0, outside = 0;
		fg.frames.forEach((g) => {
			if (g.style.display === "none") {
				hidden++;
				return;
			}
			const above = fg.inverted ? g.fgY > t.fgY : g.fgY < t.fgY;
			if (above) {
				kids++;
				if (g.fgX < lo - 1e-4 || g.fgX + g.fgW > hi + 1e-4)
					outside++;
			}
		});
		return { x: r.getAttribute("x"), w: r.getAttribute("width"), hidden, kids, outside,
			 unzoom: !document.getElementById("unzoom").classList.contains("hide") };
	}, target);
	console.log("zoom_x=" + z.x + " zoom_w=" + z.w);
	console.log("zoom_hidden=" + z.hidden + " zoom_kids=" + z.kids + " zoom_outside=" + z.outside);
	console.log("unzoom=" + (z.unzoom ? 1 : 0));
	await page.click("#unzoom");
	console.log("reset_hidden=" + await page.evaluate(() =>
		fg.frames.filter((g) => g.style.display === "none").length));
	console.log("errors=" + errors.length + (errors.length ? " " + errors.join("; ") : ""));
});
