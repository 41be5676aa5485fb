// Opens a report.html in Debian's headless Chromium and tells what a person would see, as JSON
// on stdout: tests/broker/test_report_browser.py asserts on it.
//   node check_report.mjs REPORT.html SHOTS_DIR TRANSCRIPT_CELL_ID [SITE_INDEX.html]
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [report, shots, transcriptCell, siteIndex] = process.argv.slice(2);
const profile = mkdtempSync(join(tmpdir(), "acemq-interop-chromium-"));
const found = {};
// A screenshot of one element (what fits in a 1280x1400 viewport), taken after scrolling it to
// the top: element and full-page screenshots of a long page time out waiting on its layout.
async function shot(page, locator, path) {
  await locator.evaluate((el) => el.scrollIntoView({ block: "start" }));
  const box = await locator.boundingBox();
  const height = page.viewportSize().height;
  await page.screenshot({ path, clip: { x: box.x, y: Math.max(0, box.y),
    width: box.width, height: Math.min(box.height, height - Math.max(0, box.y)) } });
}
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 1400 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(pathToFileURL(report).href);
  await page.screenshot({ path: join(shots, "report-top.png"), clip: { x: 0, y: 0, width: 1280, height: 1000 } });

  // What comes first: the verdict, then the list of failures.
  found.verdict = (await page.locator("#verdict").innerText()).trim();
  found.sectionOrder = await page.$$eval("section", (s) => s.map((x) => x.id));
  found.headingOrder = await page.$$eval("h2", (h) => h.map((x) => x.innerText.trim()));
  found.failures = await page.$$eval("#failures > li", (items) => items.map((li) => ({
    cell: li.dataset.cell,
    text: li.innerText,
    ruleLink: li.querySelector(".rule a") ? li.querySelector(".rule a").getAttribute("href") : null,
    top: li.getBoundingClientRect().top,
  })));
  found.errorGroups = await page.$$eval("#errors > li", (items) => items.map((li) => li.innerText));
  found.firstFailureVisibleWithoutScrolling = found.failures.length > 0 && found.failures[0].top < 800;

  // The pair drill-down: click the first pair cell that is not all-pass.
  const pair = page.locator("table.matrix td.FAIL a, table.matrix td.ERROR a").first();
  found.pairCount = await page.locator("table.matrix td a").count();
  if (await pair.count()) {
    const target = (await pair.getAttribute("href")).slice(1);
    found.pairText = (await pair.innerText()).trim();
    const before = await page.locator(`[id="${target}"]`).isVisible();
    await pair.click();
    const drill = page.locator(`[id="${target}"]`);
    found.drill = { id: target, hiddenBefore: !before, visibleAfter: await drill.isVisible(), text: await drill.innerText() };
    await shot(page, drill, join(shots, "pair-drilldown.png"));
  }
  // No PPPPPP letter strings anywhere in the matrices.
  found.matrixTexts = await page.$$eval("table.matrix td", (tds) => tds.map((t) => t.innerText.trim()));

  // The transcript of a failing cell.
  const anchor = "cell-" + transcriptCell.replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^-+|-+$/g, "");
  const transcript = page.locator(`[id="${anchor}-transcript"]`);
  found.transcriptPresent = (await transcript.count()) > 0;
  if (found.transcriptPresent) {
    await page.goto(pathToFileURL(report).href + `#${anchor}-transcript`);
    await transcript.scrollIntoViewIfNeeded();
    found.transcriptText = await transcript.innerText();
    found.transcriptRows = await transcript.locator("tr.msg").count();
    found.lanes = await transcript.locator("th.lane").allInnerTexts();
    await shot(page, transcript, join(shots, "transcript.png"));
  }

  // Every other transcript on the page, as a person would scroll to it.
  const all = page.locator("div.transcript");
  found.transcripts = await all.count();
  for (let i = 0; i < Math.min(found.transcripts, 4); i++) {
    await shot(page, all.nth(i), join(shots, `transcript-${i + 1}.png`));
  }

  // A PASS cell's packed steps unpack when opened.
  const lazy = page.locator("details.lazy").first();
  if (await lazy.count()) {
    await lazy.locator("summary").click();
    await page.waitForFunction((el) => !el.querySelector(".body").innerText.includes("unpacking"), await lazy.elementHandle(), { timeout: 5000 });
    found.lazyText = (await lazy.locator(".body").innerText()).slice(0, 400);
  }

  // Open every evidence block, then: does anything stick out to the right?
  await page.$$eval("details", (ds) => ds.forEach((d) => { d.open = true; }));
  found.overflow = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [];
    for (const el of document.querySelectorAll("pre, .problem, .cell, .transcript, .eo, code.rerun")) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && (r.right > width + 1 || el.scrollWidth > el.clientWidth + 1)) {
        wide.push({ tag: el.tagName, cls: el.className, right: r.right, scroll: el.scrollWidth, client: el.clientWidth });
      }
    }
    return { page: document.documentElement.scrollWidth > width + 1, scrollWidth: document.documentElement.scrollWidth, width, wide: wide.slice(0, 10) };
  });
  found.pageErrors = errors;

  if (siteIndex) {
    const site = await browser.newPage();
    await site.goto(pathToFileURL(siteIndex).href);
    found.siteRows = await site.$$eval("#runs tr", (rows) => rows.slice(1).map((r) => ({
      text: r.innerText, href: r.querySelector("a") ? r.querySelector("a").href : null })));
    await site.screenshot({ path: join(shots, "site-index.png") });
    found.siteLinksOpen = [];
    for (const row of found.siteRows) {
      const res = await site.goto(row.href);
      found.siteLinksOpen.push({ href: row.href, ok: !!res && res.ok(), title: await site.title() });
    }
  }
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(found));
