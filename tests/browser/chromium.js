// chromium.js - starts Debian's Chromium, headless, for the browser
// checks of tests/e2e/views.sh, through playwright-core (installed into
// build/node_modules by tests/deps.sh; it drives the browser over the
// DevTools protocol and downloads nothing).  The flags keep Chromium off
// the network: this machine has none, and a test must not depend on it.
"use strict";
const path = require("path");

const modules = path.join(__dirname, "..", "..", "build", "node_modules");

function playwright() {
	return require(path.join(modules, "playwright-core"));
}

async function launch() {
	return playwright().chromium.launch({
		executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
		args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		       "--disable-background-networking", "--disable-component-update",
		       "--disable-sync"],
	});
}

// Runs main(browser), prints its failure and exits 1 if it throws.
function run(main) {
	let browser = null;
	const guard = setTimeout(() => {
		console.error("timed out");
		process.exit(1);
	}, 120000);
	launch().then(async (b) => {
		browser = b;
		await main(b);
	}).then(async () => {
		clearTimeout(guard);
		await browser.close();
	}).catch(async (e) => {
		console.error(String(e && e.stack || e));
		if (browser)
			await browser.close().catch(() => {});
		process.exit(1);
	});
}

module.exports = { modules, launch, run };
