// Load a served spillscope page in headless Chromium, wait for the app to draw,
// screenshot it, and report what the page shows and what it fetched.
// usage: node shot.mjs URL OUT.png
import { chromium } from "playwright-core";

const [url, out] = process.argv.slice(2);
const origin = new URL(url).origin;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const requests = [];
page.on("request", (r) => requests.push(r.url()));
await page.goto(url);

// Pixels of the terminal's text layer: the app draws its tree and badges there.
const measure = () => page.evaluate(() => {
  const connected = !!document.querySelector(".textual-terminal.-connected");
  const canvas = document.querySelector("canvas.xterm-text-layer");
  if (!canvas) return { connected, canvas: false, painted: 0, red: 0 };
  const { width, height } = canvas;
  const data = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  let painted = 0, red = 0;
  for (let i = 0; i < data.length; i += 16) {
    const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
    if (a > 0) painted++;
    if (a > 0 && r > 180 && g < 90 && b > 40) red++;
  }
  return { connected, canvas: true, painted, red, width, height };
});

let state = {};
for (let i = 0; i < 160; i++) {
  state = await measure();
  if (state.connected && state.red > 50 && state.painted > 5000) break;
  await page.waitForTimeout(250);
}
await page.waitForTimeout(500);
state = await measure();
await page.screenshot({ path: out });
const external = requests.filter((u) => !u.startsWith(origin) && !u.startsWith("data:"));
console.log(JSON.stringify({ ...state, external, requests: requests.length }));
await browser.close();
