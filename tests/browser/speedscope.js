// speedscope.js - loads a profile into the real speedscope app (the npm
// package's own build, served from 127.0.0.1 by this script) in headless
// Chromium, as `speedscope FILE` would open it, and prints what the app
// shows, one "key=value" line each, for tests/e2e/views.sh to check:
//
//   usage: node speedscope.js PROFILE.json
//
//   title=TEXT          the toolbar's profile name, "NAME (I/N)"
//   thread=NAME<TAB>TOTAL   each profile (thread) and its total weight
//   row=TOTAL<TAB>SELF<TAB>NAME   the Sandwich view's rows in view (the
//                       top functions by self time), as formatted
//   errors=N            errors the page threw
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");
const { modules, run } = require("./chromium.js");

const profile = process.argv[2];
const app = path.join(modules, "speedscope", "dist", "release");
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css",
		".json": "application/json", ".wasm": "application/wasm",
		".woff2": "font/woff2", ".png": "image/png" };

// Serves the app's files, and the profile as /profile.json.
const server = http.createServer((req, res) => {
	const url = decodeURIComponent(req.url.split(/[?#]/)[0]);
	const file = url === "/profile.json" ? profile :
		path.join(app, path.normalize(url).replace(/^(\.\.[/\\])+/, ""));
	if (!file.startsWith(app) && file !== profile) {
		res.writeHead(403);
		res.end();
		return;
	}
	fs.readFile(file, (err, data) => {
		if (err) {
			res.writeHead(404);
			res.end();
			return;
		}
		res.writeHead(200, { "Content-Type": types[path.extname(file)] || "application/octet-stream" });
		res.end(data);
	});
});

server.listen(0, "127.0.0.1", () => run(async (browser) => {
	const base = "http://127.0.0.1:" + server.address().port;
	const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.goto(base + "/index.html#profileURL=" + encodeURIComponent(base + "/profile.json"));
	// Loaded: the toolbar names the profile shown, "NAME (I/N)".
	await page.waitForFunction(() => /\(\d+\/\d+\)/.test(document.body.innerText), null,
				   { timeout: 90000 });
	const title = await page.evaluate(() =>
		document.body.innerText.split("\n").find((l) => /\(\d+\/\d+\)\s*$/.test(l)));
	console.log("title=" + title.trim());
	for (const t of await page.$$eval("tr[title]", (rows) =>
		rows.map((r) => [...r.querySelectorAll("td")].map((d) => d.innerText.trim()))))
		console.log("thread=" + t[1] + "\t" + t[2]);
	await page.getByText("Sandwich").click();
	await page.waitForFunction(() => [...document.querySelectorAll("tr")]
		.some((r) => r.querySelectorAll("td").length === 3 && !r.title));
	const rows = await page.$$eval("tr", (trs) => trs
		.filter((r) => r.querySelectorAll("td").length === 3 && !r.title)
		.map((r) => [...r.querySelectorAll("td")].map((d) => d.innerText.trim())));
	for (const r of rows)
		console.log("row=" + r[0].replace(/ \(.*/, "") + "\t" + r[1].replace(/ \(.*/, "") + "\t" + r[2]);
	console.log("errors=" + errors.length + (errors.length ? " " + errors.join("; ") : ""));
	server.close();
}));
