#!/usr/bin/env node
// The packet playground (web/playground) in headless Chromium, against andromedactl:
//
//   node tests/browser/playground_test.mjs --page build/playground/index.html \
//        --ctl build/userspace/ctl/andromedactl [--screenshot docs/images/playground.png]
//
// Opens the page as a file:// URL (the WebAssembly pipeline is embedded in
// andromeda_playground.js beside it) and checks, one line each:
//   0. the page's ports and the README example's fields are the engine's for the sample fabric;
//   1. the "README example" preset is forwarded, and the frame it puts on the underlay is byte
//      for byte `andromedactl inspect --print-hex`'s example, decoded exactly as
//      `andromedactl inspect HEX` prints it;
//   2. a spoofed source typed into the form is dropped for a spoofing reason;
//   3. (README example again) hovering the outer UDP layer lights exactly its bytes in the hex
//      dump, and hovering a byte lights exactly its field and its layer;
//   4. the Decode tab decodes the same hex to the same text;
//   5. a fabric edited so that it does not load shows the loader's own errors, and "Reset to
//      sample" brings the sample back;
//   6. a full-page screenshot of the README example (1400x1000 viewport) is written.
// What it expects of the sample fabric (web/playground/sample_fabric.toml) it asks the engine
// itself (the same andromeda_playground.js, loaded in Node), never a copy of its own.
// Needs /usr/bin/chromium (Debian: apt-get install chromium) and playwright-core installed here
// (cd tests/browser && npm ci --no-audit --no-fund); without either it exits 77 (skipped), or 1 in CI.
// Exit 0 when every check passed, 1 otherwise.

import { existsSync, mkdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// In CI (ANDROMEDA_REQUIRE_ROOT_TESTS=1), where install-deps installs both, a missing one fails.
const EXIT_SKIP = process.env.ANDROMEDA_REQUIRE_ROOT_TESTS === '1' ? 1 : 77;
const CHROMIUM = '/usr/bin/chromium';
const HERE = path.dirname(fileURLToPath(import.meta.url));
const PLAYWRIGHT = path.join(HERE, 'node_modules', 'playwright-core', 'index.mjs');
const STEP_TIMEOUT_MS = 30_000;
const LOAD_TIMEOUT_MS = 90_000;      // compiling a large wasm module on a busy 2-core CI runner
const WATCHDOG_MS = 240_000;

function usage(message) {
  if (message) console.error(`playground_test: ${message}`);
  console.error('usage: node tests/browser/playground_test.mjs --page INDEX_HTML --ctl ANDROMEDACTL [--screenshot PNG]');
  process.exit(2);
}

function parseArgs(argv) {
  const args = { page: null, ctl: null, screenshot: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--(page|ctl|screenshot)(?:=(.*))?$/.exec(a);
    if (!m) usage(`unknown argument ${a}`);
    const value = m[2] !== undefined ? m[2] : argv[++i];
    if (value === undefined || value === '') usage(`--${m[1]} needs a value`);
    args[m[1]] = value;
  }
  if (!args.page || !args.ctl) usage('--page and --ctl are required');
  return args;
}

// ---------------------------------------------------------------------------- checks bookkeeping
const results = [];
function pass(name, detail) {
  results.push({ name, ok: true });
  console.log(`PASS ${name}${detail ? ` — ${detail}` : ''}`);
}
function failCheck(name, detail) {
  results.push({ name, ok: false });
  console.log(`FAIL ${name} — ${detail}`);
}
async function check(name, fn) {
  try {
    const detail = await fn();
    pass(name, detail);
    return true;
  } catch (e) {
    failCheck(name, e && e.message ? e.message : String(e));
    return false;
  }
}
function assert(cond, message) {
  if (!cond) throw new Error(message);
}

// Compares two texts line for line; returns null when equal, else where they first differ.
function firstDifference(expected, actual, expectedName, actualName) {
  const lines = (s) => {
    const l = s.split('\n');
    if (l.length && l[l.length - 1] === '') l.pop();
    return l;
  };
  const a = lines(expected), b = lines(actual);
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) {
      const show = (x) => (x === undefined ? '(no such line)' : JSON.stringify(x));
      const w = Math.max(expectedName.length, actualName.length) + 1;
      return `line ${i + 1} differs:\n    ${(expectedName + ':').padEnd(w)} ${show(a[i])}\n    ${(actualName + ':').padEnd(w)} ${show(b[i])}`;
    }
  }
  return null;
}

function runCtl(ctl, args) {
  const r = spawnSync(ctl, args, { encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw new Error(`${ctl} ${args.join(' ')}: ${r.error.message}`);
  // Exit 1 means "decoded, but malformed": the text is still the decode.
  if (r.status !== 0 && r.status !== 1) throw new Error(`${ctl} ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

// ---------------------------------------------------------------------------- the engine
// The page's module in Node (built with -sENVIRONMENT=web,node): request in, answer out.
async function loadEngine(pageDir) {
  const factory = createRequire(import.meta.url)(path.join(pageDir, 'andromeda_playground.js'));
  const module = await factory();
  const call = module.cwrap('playground_call', 'string', ['string']);
  return (request) => {
    const answer = JSON.parse(call(JSON.stringify(request)));
    if (!answer.ok && request.op !== 'fabric') throw new Error(`the engine refused ${JSON.stringify(request).slice(0, 80)}: ${answer.error}`);
    return answer;
  };
}

// ---------------------------------------------------------------------------- the page
async function counter(page, name) {
  return page.evaluate((n) => Number(document.body.dataset[n] || 0), name);
}

// Waits until the page has completed a run (or decode) after `before` and has nothing pending.
async function waitIdle(page, name, before) {
  await page.waitForFunction(
    ({ n, b }) => Number(document.body.dataset[n] || 0) > b && !('busy' in document.body.dataset),
    { n: name, b: before },
    { timeout: STEP_TIMEOUT_MS, polling: 25 },
  );
}

async function typeInto(page, selector, text) {
  const input = page.locator(selector);
  await input.click();
  await input.fill('');
  await input.pressSequentially(text, { delay: 10 });
}

async function clickReadme(page) {
  const before = await counter(page, 'runs');
  await page.getByRole('button', { name: 'README example' }).click();
  await waitIdle(page, 'runs', before);
}

function underlayCard(page) {
  return page.locator('#frames .frame-card[data-role="emission"][data-port="underlay"]');
}

// The outer UDP layer of a card: the shallowest layer that is UDP.
async function outerUdpLayer(card) {
  const layers = card.locator('.layer[data-layer="udp"]');
  const n = await layers.count();
  assert(n > 0, 'the emission has no UDP layer');
  let best = 0, bestDepth = Infinity;
  for (let i = 0; i < n; i++) {
    const d = Number(await layers.nth(i).getAttribute('data-depth'));
    if (d < bestDepth) { best = i; bestDepth = d; }
  }
  return layers.nth(best);
}

async function litIndices(card, cls) {
  return card.evaluate((c, k) => Array.from(c.querySelectorAll(`.hex .byte.${k}`), (e) => Number(e.dataset.index)).sort((a, b) => a - b), cls);
}

function expectRange(indices, offset, length, what) {
  const want = Array.from({ length }, (_, i) => offset + i);
  const same = indices.length === want.length && indices.every((v, i) => v === want[i]);
  assert(same, `${what}: expected bytes ${offset}..${offset + length - 1} (${length}) lit, got ${indices.length} lit: [${indices.slice(0, 24).join(', ')}${indices.length > 24 ? ', …' : ''}]`);
}

// ---------------------------------------------------------------------------- main
async function main() {
  const args = parseArgs(process.argv.slice(2));

  if (!existsSync(CHROMIUM)) {
    console.log(`SKIP: ${CHROMIUM} is missing. Install Debian's Chromium: apt-get install -y chromium`);
    return EXIT_SKIP;
  }
  if (!existsSync(PLAYWRIGHT)) {
    console.log(`SKIP: playwright-core is not installed in ${HERE}. Install it: cd ${HERE} && npm install --no-audit --no-fund`);
    return EXIT_SKIP;
  }
  const pagePath = path.resolve(args.page);
  if (!existsSync(pagePath) || !statSync(pagePath).isFile()) {
    console.log(`FAIL: the page ${pagePath} does not exist (build the playground first)`);
    return 1;
  }
  if (!existsSync(path.join(path.dirname(pagePath), 'andromeda_playground.js')))
    console.log(`note: there is no andromeda_playground.js beside ${pagePath}; the page will say so`);
  const ctl = path.resolve(args.ctl);
  if (!existsSync(ctl)) {
    console.log(`FAIL: andromedactl ${ctl} does not exist`);
    return 1;
  }

  const { chromium } = await import(pathToFileURL(PLAYWRIGHT).href);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const pageErrors = [];
  const consoleErrors = [];
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, colorScheme: 'light' });
    const page = await context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });

    const url = pathToFileURL(pagePath).href;
    console.log(`page: ${url}`);
    const t0 = Date.now();
    await page.goto(url);
    let ready;
    try {
      await page.waitForFunction(() => document.body.dataset.ready && document.body.dataset.ready !== '0', null, { timeout: LOAD_TIMEOUT_MS });
      ready = await page.evaluate(() => document.body.dataset.ready);
    } catch (e) {
      ready = `not set after ${LOAD_TIMEOUT_MS / 1000} s (${e.message.split('\n')[0]})`;
    }
    if (ready !== '1') {
      const err = (await page.textContent('#error')) || '(no message)';
      failCheck('the page loads the pipeline', `body[data-ready] is "${ready}": ${err.trim()}`);
    } else {
      pass('the page loads the pipeline', `ready in ${Date.now() - t0} ms`);
      await runChecks(page, args, ctl, await loadEngine(path.dirname(pagePath)));
    }
    if (pageErrors.length) failCheck('no uncaught errors in the page', pageErrors.join(' | '));
    else pass('no uncaught errors in the page');
  } finally {
    await browser.close().catch(() => {});
    if (consoleErrors.length) console.log(`page console errors:\n  ${consoleErrors.join('\n  ')}`);
  }
  const failed = results.filter((r) => !r.ok).length;
  console.log(`playground: ${results.length - failed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

async function runChecks(page, args, ctl, engine) {
    const sample = engine({ op: 'sample' });
    const described = engine({ op: 'fabric', fabric: sample.fabric });

    // 0. what the page shows of the sample is the engine's ---------------------------------
    await check('0. the ports and the README example are the engine\'s', async () => {
      // The page groups them (tenant ports, then the fabric's): the same ports, in any order.
      const options = (await page.locator('#ingress-port option').evaluateAll((os) => os.map((o) => o.value))).sort();
      const ports = described.ports.map((p) => p.name).sort();
      assert(JSON.stringify(options) === JSON.stringify(ports), `the ingress ports are ${JSON.stringify(options)}, the engine's ${JSON.stringify(ports)}`);
      await clickReadme(page);
      const readme = described.examples.readme;
      const form = await page.evaluate(() => ({
        port: document.querySelector('#ingress-port').value,
        src_mac: document.querySelector('#src-mac').value, dst_mac: document.querySelector('#dst-mac').value,
        src_ip: document.querySelector('#src-ip').value, dst_ip: document.querySelector('#dst-ip').value,
        underlay_mac: document.querySelector('#underlay-mac').value,
      }));
      const want = { port: readme.port, src_mac: readme.packet.src_mac, dst_mac: readme.packet.dst_mac,
        src_ip: readme.packet.src_ip, dst_ip: readme.packet.dst_ip, underlay_mac: sample.underlay_mac };
      assert(JSON.stringify(form) === JSON.stringify(want), `the form holds ${JSON.stringify(form)}, the engine's example ${JSON.stringify(want)}`);
      return `${ports.length} ports; README example from ${readme.port} (${readme.packet.src_ip} -> ${readme.packet.dst_ip}, to gateway MAC ${readme.packet.dst_mac})`;
    });

    // 1. README example ------------------------------------------------------------------
    let pageHex = null;
    let ctlText = null;
    await check('1. README example is forwarded, byte for byte andromedactl\'s example', async () => {
      await clickReadme(page);
      const verdict = (await page.textContent('#verdict')).trim();
      assert(verdict === 'forward', `#verdict is "${verdict}", expected "forward" (summary: ${(await page.textContent('#summary')).trim()}; error: ${(await page.textContent('#error')).trim() || 'none'})`);
      const cards = underlayCard(page);
      assert(await cards.count() >= 1, 'no emission card on port underlay');
      pageHex = await cards.first().locator('.hex').getAttribute('data-hex');
      assert(pageHex && /^[0-9a-f]+$/.test(pageHex), `the underlay card's data-hex is not lowercase hex: ${JSON.stringify(pageHex)}`);

      const printed = runCtl(ctl, ['inspect', '--print-hex']);
      const first = printed.split('\n')[0];
      const m = /^hex ([0-9a-f]+)$/.exec(first);
      assert(m, `andromedactl inspect --print-hex did not start with "hex <digits>": ${JSON.stringify(first)}`);
      if (m[1] !== pageHex) {
        let i = 0;
        while (i < pageHex.length && pageHex[i] === m[1][i]) i++;
        const at = Math.floor(i / 2);
        const where = await cards.first().evaluate((card, b) => {
          for (const f of card.querySelectorAll('.field')) {
            const o = Number(f.dataset.offset), n = Number(f.dataset.length);
            if (b >= o && b < o + n) return `${f.closest('.layer').dataset.layer} ${f.querySelector('.fn').textContent}`;
          }
          return null;
        }, at);
        throw new Error(`the page emitted other bytes than andromedactl's example: first difference at byte ${at}${where ? ` (${where})` : ''}\n    andromedactl: ${m[1]}\n    page:         ${pageHex}`);
      }
      const flow = (await page.textContent('#flow-hash')).trim();
      const sport = (await page.textContent('#source-port')).trim();
      return `underlay frame ${pageHex.length / 2} bytes = andromedactl's example; flow ${flow}, source port ${sport}`;
    });

    await check('1b. the emission\'s inspect text is andromedactl inspect\'s, line for line', async () => {
      assert(pageHex, 'no hex from check 1');
      ctlText = runCtl(ctl, ['inspect', pageHex]);
      const shown = await underlayCard(page).first().locator('.inspect-text').textContent();
      const diff = firstDifference(ctlText, shown, 'andromedactl', 'page');
      assert(!diff, diff);
      const note = ctlText === shown ? '' : ' (they differ only in the final newline)';
      return `${ctlText.trimEnd().split('\n').length} lines equal${note}`;
    });

    // 2. spoofed source, typed -----------------------------------------------------------
    await check('2. a spoofed source typed into the form is dropped', async () => {
      const spoof = described.examples.spoof;
      assert(spoof.packet, `the engine has no spoofed-source example: ${spoof.error}`);
      await page.mouse.move(0, 0);
      const before = await counter(page, 'runs');
      await page.selectOption('#ingress-port', spoof.port);
      await page.selectOption('#protocol', spoof.packet.protocol);
      await typeInto(page, '#src-mac', spoof.packet.src_mac);
      await typeInto(page, '#src-ip', spoof.packet.src_ip);
      await typeInto(page, '#dst-ip', spoof.packet.dst_ip);
      await waitIdle(page, 'runs', before);
      const verdict = (await page.textContent('#verdict')).trim();
      assert(verdict === 'drop', `#verdict is "${verdict}", expected "drop" (error: ${(await page.textContent('#error')).trim() || 'none'})`);
      const reason = (await page.textContent('#drop-reason')).trim();
      const description = (await page.textContent('#drop-description')).trim();
      console.log(`     drop reason: ${reason} — ${description}`);
      assert(reason === 'spoofed_source_ip' || reason.includes('spoof'), `#drop-reason is "${reason}", expected spoofed_source_ip (or another name with "spoof")`);
      assert(description.length > 0, '#drop-description is empty');
      assert(await page.locator('#frames .frame-card[data-role="emission"]').count() === 0, 'a dropped frame has emissions');
      return reason === 'spoofed_source_ip' ? reason : `${reason} (accepted: names a spoof, not spoofed_source_ip)`;
    });

    // 3. hover highlights ----------------------------------------------------------------
    await check('3. hovering the outer UDP layer lights exactly its bytes', async () => {
      await clickReadme(page);  // back to a frame on the underlay
      const card = underlayCard(page).first();
      assert(await card.count() === 1, 'no underlay emission to hover after README example');
      const layer = await outerUdpLayer(card);
      const offset = Number(await layer.getAttribute('data-offset'));
      const length = Number(await layer.getAttribute('data-length'));
      assert(Number.isInteger(offset) && length > 0, `the UDP layer has data-offset ${offset}, data-length ${length}`);
      await layer.locator('.layer-line').hover();
      expectRange(await litIndices(card, 'hl-layer'), offset, length, 'layer hover');
      assert((await litIndices(card, 'hl-field')).length === 0, 'a field is lit while hovering the layer line');
      return `bytes ${offset}..${offset + length - 1} lit, nothing else`;
    });

    await check('3b. hovering a byte lights exactly its field and its layer', async () => {
      const card = underlayCard(page).first();
      const layer = await outerUdpLayer(card);
      const offset = Number(await layer.getAttribute('data-offset'));
      const length = Number(await layer.getAttribute('data-length'));
      const fields = await layer.locator('.field').evaluateAll((els) => els.map((e) => ({ name: e.querySelector('.fn')?.textContent, offset: Number(e.dataset.offset), length: Number(e.dataset.length) })));
      assert(fields.length > 0, 'the UDP layer lists no fields');
      // The destination port's first byte (UDP bytes 2-3): the field that holds it, smallest first.
      const b = offset + 2;
      const holding = fields.filter((f) => b >= f.offset && b < f.offset + f.length).sort((x, y) => x.length - y.length);
      assert(holding.length > 0, `no field of the UDP layer covers byte ${b}`);
      await page.mouse.move(0, 0);
      await card.locator(`.hex .byte[data-index="${b}"]`).hover();
      expectRange(await litIndices(card, 'hl-field'), holding[0].offset, holding[0].length, `byte ${b} hover, field ${holding[0].name}`);
      expectRange(await litIndices(card, 'hl-layer'), offset, length, `byte ${b} hover, its layer`);
      return `byte ${b} lights field ${holding[0].name} (${holding[0].offset}+${holding[0].length}) and the UDP layer`;
    });

    // 4. decode tab ----------------------------------------------------------------------
    await check('4. the Decode tab decodes the hex as andromedactl does', async () => {
      assert(pageHex && ctlText, 'no hex and text from check 1');
      await page.click('#tab-btn-decode');
      const before = await counter(page, 'decodes');
      await page.locator('#decode-hex').fill(pageHex);
      await waitIdle(page, 'decodes', before);
      const cards = page.locator('#decode-results .frame-card');
      assert(await cards.count() === 1, `${await cards.count()} decoded cards, expected 1 (error: ${(await page.textContent('#error')).trim() || 'none'})`);
      const hex = await cards.first().locator('.hex').getAttribute('data-hex');
      assert(hex === pageHex, 'the decoded card shows other bytes than were pasted');
      const shown = await cards.first().locator('.inspect-text').textContent();
      const diff = firstDifference(ctlText, shown, 'andromedactl', 'decode tab');
      assert(!diff, diff);
      return 'same text';
    });

    // 5. a fabric that does not load ------------------------------------------------------
    await check('5. a fabric that does not load shows the loader\'s errors, and the sample comes back', async () => {
      await page.click('#tab-btn-pipeline');
      const broken = sample.fabric.replace('cidr = "10.0.0.0/24"', 'cidr = "10.0.0.0/33"');
      assert(broken !== sample.fabric, 'the sample has no cidr = "10.0.0.0/24" to break');
      const refused = engine({ op: 'fabric', fabric: broken });
      assert(!refused.ok && Array.isArray(refused.errors) && refused.errors.length, `the engine loaded the broken fabric: ${JSON.stringify(refused).slice(0, 200)}`);
      await page.locator('#fabric-details summary').click();
      let before = await counter(page, 'runs');
      await page.locator('#fabric').fill(broken);
      await waitIdle(page, 'runs', before);
      const shown = (await page.textContent('#error')) || '';
      for (const line of refused.errors) assert(shown.includes(line), `#error does not show the loader's "${line}": ${JSON.stringify(shown)}`);
      assert(/^node\.toml:\d+: /.test(refused.errors[0]), `not file:line: key: what: ${refused.errors[0]}`);
      before = await counter(page, 'runs');
      await page.click('#fabric-reset');
      await waitIdle(page, 'runs', before);
      assert((await page.locator('#fabric').inputValue()) === sample.fabric, 'Reset to sample did not bring the sample back');
      assert(await page.locator('#error').isHidden(), `an error is still shown: ${(await page.textContent('#error')).trim()}`);
      await page.locator('#fabric-details summary').click();
      return refused.errors.join(' | ');
    });

    // 6. screenshot ----------------------------------------------------------------------
    if (args.screenshot) {
      await check('6. screenshot of the README example', async () => {
        await page.click('#tab-btn-pipeline');
        await clickReadme(page);
        const verdict = (await page.textContent('#verdict')).trim();
        assert(verdict === 'forward', `#verdict is "${verdict}" after README example again`);
        // Show the hover feature: the outer UDP layer of the underlay frame lit.
        const card = underlayCard(page).first();
        if (await card.count()) await (await outerUdpLayer(card)).locator('.layer-line').hover();
        const out = path.resolve(args.screenshot);
        mkdirSync(path.dirname(out), { recursive: true });
        await page.screenshot({ path: out, fullPage: true });
        return `${out} (${statSync(out).size} bytes)`;
      });
    }
}

const watchdog = setTimeout(() => {
  console.log(`FAIL: the test did not finish within ${WATCHDOG_MS / 1000} s`);
  process.exit(1);
}, WATCHDOG_MS);
watchdog.unref();

main().then((code) => {
  process.exitCode = code;
}, (e) => {
  console.log(`FAIL: ${e && e.stack ? e.stack : e}`);
  process.exitCode = 1;
});
