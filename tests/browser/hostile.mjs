// A hostile page in real Chromium: first the operator opens the served app (its cookie is
// set), then a page from another origin tries to reach the server the ways a page can:
// a WebSocket to the app, a fetch, an iframe, an image and a script.
// usage: node hostile.mjs GOOD_URL EVIL_URL  — prints a JSON report of what got through.
import { chromium } from "playwright-core";

const [good, evil] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
});
const context = await browser.newContext();
const app = await context.newPage();
await app.goto(good);
let connected = false;
for (let i = 0; i < 120 && !connected; i++) {
  connected = await app.evaluate(() => !!document.querySelector(".textual-terminal.-connected"));
  if (!connected) await app.waitForTimeout(250);
}
const page = await context.newPage();
await page.goto(evil);
await page.waitForFunction(() => window.report && window.report.done, null, { timeout: 30000 });
const report = await page.evaluate(() => window.report);
console.log(JSON.stringify({ connected, ...report }));
await browser.close();
