// The packet playground's page logic: a form builds a frame (op "build"), the WebAssembly
// pipeline runs it (op "run"), and every frame is shown as a layer stack and a hex dump that light
// each other up. Plain ES2020, no framework: it runs from file:// beside andromeda_playground.js.
//
// The module's API: AndromedaPlayground() resolves to the Emscripten module, whose
// cwrap('playground_call', 'string', ['string']) takes a JSON request and returns a JSON response
// with "ok" (and "error" when false).
//
// For tests the page publishes its state on <body>: data-ready ("0", "1", or "error"),
// data-busy (present while a run is scheduled or going), data-runs (completed runs),
// data-decodes (completed decodes).
(() => {
  'use strict';

  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const body = document.body;

  // The README example: 10.0.0.10:40000 -> 10.0.0.20:4242 over UDP from tap-blue-10 on node1, in
  // VNI 100 with Andromeda encapsulation. dst_mac is replaced by the VPC's gateway MAC as the
  // sample fabric states it, once the fabric is loaded.
  const DEFAULTS = Object.freeze({
    src_mac: '02:00:00:00:00:0a', dst_mac: '02:00:00:00:00:ff',
    src_ip: '10.0.0.10', dst_ip: '10.0.0.20', protocol: 'udp',
    src_port: 40000, dst_port: 4242, ttl: 64, df: true, payload: 'hello, vpc!\n',
    port: 'tap-blue-10', node: 'node1', encap: 'andromeda', vni: 100,
  });
  const GATEWAY_MAC_DEFAULT = '02:00:00:00:00:ff';  // node.toml's default gateway_mac
  const INTERNET_HOST = '198.51.100.7';
  const DEBOUNCE_MS = 100;
  // cwrap copies a string argument onto the wasm stack (4 bytes reserved per character); keep
  // requests well below Emscripten's default 5 MiB stack unless the heap path below is there.
  const STACK_REQUEST_LIMIT = 256 * 1024;
  const DECODE_BATCH = 50;

  const el = {
    form: $('#packet-form'),
    srcMac: $('#src-mac'), dstMac: $('#dst-mac'), srcIp: $('#src-ip'), dstIp: $('#dst-ip'),
    protocol: $('#protocol'), srcPort: $('#src-port'), dstPort: $('#dst-port'),
    srcPortLabel: $('#src-port-label'), dstPortLabel: $('#dst-port-label'),
    ttl: $('#ttl'), df: $('#df'), payload: $('#payload'), payloadCount: $('#payload-count'),
    port: $('#ingress-port'), usePortEndpoint: $('#use-port-endpoint'),
    node: $('#node'), encap: $('#encap'), vni: $('#vni'), underlayMac: $('#underlay-mac'),
    fabric: $('#fabric'), fabricState: $('#fabric-state'), fabricReset: $('#fabric-reset'),
    error: $('#error'),
    verdict: $('#verdict'), summary: $('#summary'),
    dropBox: $('#drop-box'), dropReason: $('#drop-reason'), dropLayer: $('#drop-layer'),
    dropDescription: $('#drop-description'),
    flowBox: $('#flow-box'), flowHash: $('#flow-hash'), sourcePort: $('#source-port'), runNode: $('#run-node'), onNode: $('#on-node'),
    frames: $('#frames'), results: $('#results'),
    decodeHex: $('#decode-hex'), decodeFile: $('#decode-file'), decodeResults: $('#decode-results'),
    decodeStatus: $('#decode-status'), decodeDrop: $('#decode-drop'), decodeRun: $('#decode-run'),
    statusLine: $('#status-line'),
  };

  const state = {
    module: null,
    call: null,
    sampleText: '',        // the fabric text as last sampled
    fabricEdited: false,
    fabric: null,          // parsed node.toml (best effort, for presets and port names)
    ports: [],             // ports[] of the last successful run
    timer: null,
    runs: 0,
    decodes: 0,
    decodeTimer: null,
    errors: { pipeline: null, decode: null },
    tab: 'pipeline',
    inspectOpen: {},       // <details> state per card kind, kept across re-renders
    fatal: null,           // the module's first internal failure: it is not called again
    rendered: false,       // a run's result is on the page
  };

  // ------------------------------------------------------------------ the module
  function api(request) {
    if (state.fatal) return { ok: false, error: state.fatal };
    const text = JSON.stringify(request);
    let answer;
    try {
      answer = text.length > STACK_REQUEST_LIMIT ? callOnHeap(text) : state.call(text);
    } catch (e) {
      // An abort or an uncaught C++ exception: the module's state is unknown from here on, so
      // every later call answers with this first failure.
      state.fatal = `The pipeline module failed while handling "${request.op}" and stopped: ${e && e.message ? e.message : e}. Reload the page.`;
      return { ok: false, error: state.fatal };
    }
    if (answer && answer.tooLarge) return { ok: false, error: answer.tooLarge };
    try {
      const res = JSON.parse(answer);
      if (typeof res !== 'object' || res === null || typeof res.ok !== 'boolean') throw new Error('no "ok"');
      if (!res.ok && !res.error) res.error = `The pipeline refused "${request.op}" without saying why.`;
      return res;
    } catch (e) {
      return { ok: false, error: `The module answered "${request.op}" with something that is not a response: ${String(answer).slice(0, 160)}` };
    }
  }

  // Large requests (a capture file) go through the heap when the module exports _malloc and
  // _free (EXPORTED_FUNCTIONS); otherwise they are refused before they could overflow the wasm
  // stack. Only exported functions and HEAPU8 are used: in a build with ASSERTIONS an unexported
  // runtime helper is a stub that aborts the module when called.
  const exported = (m, name) => {
    const d = m && Object.getOwnPropertyDescriptor(m, name);
    return !!d && typeof d.value === 'function';
  };
  function callOnHeap(text) {
    const m = state.module;
    const can = ['_playground_call', '_malloc', '_free'].every((n) => exported(m, n)) && m.HEAPU8 instanceof Uint8Array;
    if (!can) {
      const kib = Math.round(text.length / 1024);
      return { tooLarge: `This input is too large for the playground (${kib} KiB as a request; at most ${STACK_REQUEST_LIMIT / 1024} KiB, a capture of about ${Math.floor(STACK_REQUEST_LIMIT / 2048)} KiB). Cut it down, e.g. with editcap -r FILE OUT 1-100.` };
    }
    const bytes = new TextEncoder().encode(text);
    const ptr = m._malloc(bytes.length + 1);
    if (!ptr) return { tooLarge: 'Not enough memory in the pipeline module for this input.' };
    try {
      m.HEAPU8.set(bytes, ptr);  // HEAPU8 is re-read on every use: memory growth replaces it
      m.HEAPU8[ptr + bytes.length] = 0;
      const out = m._playground_call(ptr);
      const heap = m.HEAPU8;
      let end = out;
      while (heap[end] !== 0) end++;
      return new TextDecoder().decode(heap.subarray(out, end));
    } finally {
      m._free(ptr);
    }
  }

  // ------------------------------------------------------------------ node.toml, just enough
  // A small reader for the TOML node.toml uses (tables, arrays of tables, strings, integers,
  // booleans, one-line arrays), used only to name things in the page (endpoint MACs, the gateway
  // MAC, the VPC with NAT). The pipeline reads the fabric itself; a text this cannot read just
  // leaves the page with its defaults.
  function parseToml(text) {
    const root = {};
    let cur = root;
    const stripComment = (s) => {
      let q = null;
      for (let i = 0; i < s.length; i++) {
        const c = s[i];
        if (q) { if (c === '\\' && q === '"') i++; else if (c === q) q = null; } else if (c === '"' || c === "'") q = c;
        else if (c === '#') return s.slice(0, i);
      }
      return s;
    };
    const value = (s) => {
      s = s.trim();
      if (s.startsWith('"')) return JSON.parse(s);
      if (s.startsWith("'")) return s.slice(1, -1);
      if (s === 'true' || s === 'false') return s === 'true';
      if (/^[-+]?\d[\d_]*$/.test(s)) return Number(s.replace(/_/g, ''));
      if (s.startsWith('[') && s.endsWith(']')) {
        const inner = s.slice(1, -1).trim();
        return inner ? inner.split(',').filter((x) => x.trim()).map(value) : [];
      }
      throw new Error(`unreadable value ${s}`);
    };
    const walk = (path) => {
      let t = root;
      for (const k of path) {
        if (!(k in t)) t[k] = {};
        t = t[k];
        if (Array.isArray(t)) t = t[t.length - 1];
        if (!t || typeof t !== 'object') throw new Error(`${k} is not a table`);
      }
      return t;
    };
    for (const raw of text.split('\n')) {
      const line = stripComment(raw).trim();
      if (!line) continue;
      let m;
      if ((m = /^\[\[\s*([\w.-]+)\s*\]\]$/.exec(line))) {
        const path = m[1].split('.');
        const parent = walk(path.slice(0, -1));
        const k = path[path.length - 1];
        if (!Array.isArray(parent[k])) parent[k] = [];
        parent[k].push({});
        cur = parent[k][parent[k].length - 1];
      } else if ((m = /^\[\s*([\w.-]+)\s*\]$/.exec(line))) {
        cur = walk(m[1].split('.'));
      } else if ((m = /^([\w-]+)\s*=\s*(.+)$/.exec(line))) {
        cur[m[1]] = value(m[2]);
      } else {
        throw new Error(`unreadable line ${line}`);
      }
    }
    return root;
  }

  function readFabric(text) {
    try {
      const t = parseToml(text);
      const self = t.node || {};
      const vpcs = (Array.isArray(t.vpc) ? t.vpc : []).map((v) => ({
        name: String(v.name || ''), vni: v.vni, gateway: v.gateway,
        gatewayMac: String(v.gateway_mac || GATEWAY_MAC_DEFAULT).toLowerCase(),
        nat: v.nat || null,
        endpoints: (Array.isArray(v.endpoint) ? v.endpoint : []).map((e) => ({
          ip: e.ip, mac: String(e.mac || '').toLowerCase(), node: e.node, port: e.port, vpc: String(v.name || ''),
        })),
      }));
      return { node: self.name, uplink: !!self.uplink, vpcs, nodes: Array.isArray(t.nodes) ? t.nodes : [] };
    } catch (e) {
      return null;
    }
  }

  // The endpoint behind a tenant port, from the fabric text (with its MAC) or from ports[].
  function endpointOfPort(name) {
    const f = state.fabric;
    if (f) {
      for (const v of f.vpcs) {
        const e = v.endpoints.find((x) => x.port === name && (!f.node || x.node === f.node));
        if (e) return { ...e, gatewayMac: v.gatewayMac, gateway: v.gateway };
      }
    }
    const p = state.ports.find((x) => x.name === name && x.role === 'tenant');
    return p ? { ip: p.endpoint, vpc: p.vpc, port: p.name, mac: null, gatewayMac: null } : null;
  }

  // Ports as the last run reported them, or (before any run, or for a new fabric) as the fabric
  // text implies them.
  function portsFromFabric(f) {
    if (!f) return [];
    const ports = [{ name: 'underlay', role: 'underlay' }];
    if (f.uplink) ports.push({ name: 'uplink', role: 'uplink' });
    for (const v of f.vpcs)
      for (const e of v.endpoints)
        if (e.port && e.node === f.node) ports.push({ name: e.port, role: 'tenant', endpoint: e.ip, vpc: v.name });
    return ports;
  }

  // ------------------------------------------------------------------ small helpers
  const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const hex2 = (n) => n.toString(16).padStart(2, '0');

  function setBusy(on) {
    if (on) body.dataset.busy = '1';
    else delete body.dataset.busy;
  }

  function showError(source, message) {
    state.errors[source] = message || null;
    renderError();
  }
  function renderError() {
    const msg = state.errors[state.tab] || state.fatal;
    if (msg) {
      el.error.textContent = msg;
      el.error.hidden = false;
    } else {
      el.error.textContent = '';
      el.error.hidden = true;
    }
  }

  function setForm(values) {
    if ('src_mac' in values) el.srcMac.value = values.src_mac;
    if ('dst_mac' in values) el.dstMac.value = values.dst_mac;
    if ('src_ip' in values) el.srcIp.value = values.src_ip;
    if ('dst_ip' in values) el.dstIp.value = values.dst_ip;
    if ('protocol' in values) el.protocol.value = values.protocol;
    if ('src_port' in values) el.srcPort.value = values.src_port;
    if ('dst_port' in values) el.dstPort.value = values.dst_port;
    if ('ttl' in values) el.ttl.value = values.ttl;
    if ('df' in values) el.df.checked = !!values.df;
    if ('payload' in values) el.payload.value = values.payload;
    if ('port' in values) selectPort(values.port);
    updateProtocolUi();
    updatePayloadCount();
  }

  function readNumber(input, what, min, max) {
    const raw = input.value.trim();
    const n = Number(raw);
    if (raw === '' || !Number.isInteger(n) || n < min || n > max) {
      input.setAttribute('aria-invalid', 'true');
      return { error: `${what} must be a whole number from ${min} to ${max}.` };
    }
    input.removeAttribute('aria-invalid');
    return { value: n };
  }

  function readPacket() {
    const protocol = el.protocol.value;
    const problems = [];
    const packet = {
      src_mac: el.srcMac.value.trim(), dst_mac: el.dstMac.value.trim(),
      src_ip: el.srcIp.value.trim(), dst_ip: el.dstIp.value.trim(),
      protocol,
    };
    const icmp = protocol === 'icmp';
    const nums = [
      ['src_port', el.srcPort, icmp ? 'The ICMP identifier' : 'The source port', 0, 65535],
      ['dst_port', el.dstPort, icmp ? 'The ICMP sequence number' : 'The destination port', 0, 65535],
      ['ttl', el.ttl, 'The TTL', 0, 255],
    ];
    for (const [key, input, what, min, max] of nums) {
      if (protocol === 'arp') { packet[key] = Number(input.value) || 0; continue; }
      const r = readNumber(input, what, min, max);
      if (r.error) problems.push(r.error); else packet[key] = r.value;
    }
    packet.df = el.df.checked;
    packet.payload = el.payload.value;
    return { packet, problems };
  }

  function updateProtocolUi() {
    const p = el.protocol.value;
    const icmp = p === 'icmp', arp = p === 'arp';
    el.srcPortLabel.textContent = icmp ? 'ICMP identifier' : 'Source port';
    el.dstPortLabel.textContent = icmp ? 'ICMP sequence' : 'Destination port';
    for (const input of [el.srcPort, el.dstPort, el.ttl, el.df, el.payload]) input.disabled = arp;
    el.form.classList.toggle('is-arp', arp);
  }

  function updatePayloadCount() {
    const n = new TextEncoder().encode(el.payload.value).length;
    el.payloadCount.textContent = `${n} byte${n === 1 ? '' : 's'}`;
  }

  // ------------------------------------------------------------------ ports, node, fabric
  function portLabel(p) {
    if (p.role === 'tenant') return `${p.name} — ${p.endpoint || '?'} (${p.vpc || '?'})`;
    return `${p.name} (${p.role})`;
  }

  function setPorts(ports) {
    const current = el.port.value || DEFAULTS.port;
    state.ports = ports.slice();
    const tenants = ports.filter((p) => p.role === 'tenant');
    const others = ports.filter((p) => p.role !== 'tenant');
    el.port.textContent = '';
    const group = (label, list) => {
      if (!list.length) return;
      const g = document.createElement('optgroup');
      g.label = label;
      for (const p of list) {
        const o = document.createElement('option');
        o.value = p.name;
        o.textContent = portLabel(p);
        g.appendChild(o);
      }
      el.port.appendChild(g);
    };
    group('tenant ports', tenants);
    group('fabric ports', others);
    selectPort(current);
  }

  function selectPort(name) {
    if (!name) return;
    if (!$$('option', el.port).some((o) => o.value === name)) {
      const o = document.createElement('option');
      o.value = name;
      o.textContent = `${name} (not on this node)`;
      o.dataset.missing = '1';
      el.port.appendChild(o);
    }
    el.port.value = name;
  }

  function setNodes(nodes) {
    if (!Array.isArray(nodes) || !nodes.length) return;
    const current = el.node.value;
    el.node.textContent = '';
    for (const n of nodes) {
      const o = document.createElement('option');
      o.value = o.textContent = n;
      el.node.appendChild(o);
    }
    el.node.value = nodes.includes(current) ? current : nodes[0];
  }

  function setFabricEdited(edited) {
    state.fabricEdited = edited;
    el.fabricState.textContent = edited ? 'edited' : 'sample';
    el.fabricState.classList.toggle('edited', edited);
    for (const input of [el.node, el.encap, el.vni]) {
      input.disabled = edited;
      input.title = edited ? 'The fabric was edited: this comes from its text. Reset it to sample to choose here.' : '';
    }
  }

  // Asks the module for the sample fabric of the chosen node/encap/VNI. Returns false (and shows
  // the module's sentence) when it refuses.
  function loadSample() {
    const vni = readNumber(el.vni, 'The VNI', 1, 16777215);
    if (vni.error) { showError('pipeline', vni.error); return false; }
    const res = api({ op: 'sample', node: el.node.value, encap: el.encap.value, vni: vni.value });
    if (!res.ok) { showError('pipeline', res.error); return false; }
    state.sampleText = String(res.fabric);
    el.fabric.value = state.sampleText;
    // The node's own underlay MAC is not in node.toml (andromedad reads it off the NIC): the
    // sample names the one its fabric assumes, and every run passes it on.
    if (typeof res.underlay_mac === 'string') el.underlayMac.value = res.underlay_mac;
    setNodes(res.nodes);
    setFabricEdited(false);
    fabricChanged();
    return true;
  }

  // After the fabric text changed: re-read it and, if the chosen port is not on its node, pick
  // one that is (preferring the same VPC).
  function fabricChanged() {
    state.fabric = readFabric(el.fabric.value);
    const ports = portsFromFabric(state.fabric);
    if (!ports.length) return;
    const current = el.port.value;
    if (!ports.some((p) => p.name === current)) {
      const old = state.ports.find((p) => p.name === current) || endpointOfPort(current);
      const vpc = old && old.vpc;
      const next = ports.find((p) => p.role === 'tenant' && p.vpc === vpc) || ports.find((p) => p.role === 'tenant') || ports[0];
      setPorts(ports);
      selectPort(next.name);
      if (next.role === 'tenant') useEndpointOf(next.name, { swapDestination: true });
    } else {
      setPorts(ports);
    }
  }

  // Sets the source MAC/IP to the port's endpoint; with swapDestination, a destination equal to
  // the new source becomes the old source (so "from node2" keeps making sense).
  function useEndpointOf(portName, { swapDestination = false } = {}) {
    const e = endpointOfPort(portName);
    if (!e) return false;
    const oldSrc = el.srcIp.value.trim();
    if (e.mac) el.srcMac.value = e.mac;
    if (e.ip) el.srcIp.value = e.ip;
    if (swapDestination && el.dstIp.value.trim() === e.ip && oldSrc && oldSrc !== e.ip) el.dstIp.value = oldSrc;
    if (e.gatewayMac && el.protocol.value !== 'arp') el.dstMac.value = e.gatewayMac;
    return true;
  }

  // ------------------------------------------------------------------ presets
  function bluePort() {
    // The README example's port: tap-blue-10 when it exists, else the first tenant port of blue.
    const ports = state.ports.length ? state.ports : portsFromFabric(state.fabric);
    if (ports.some((p) => p.name === DEFAULTS.port)) return DEFAULTS.port;
    const blue = ports.find((p) => p.role === 'tenant' && p.vpc === 'blue') || ports.find((p) => p.role === 'tenant');
    return blue ? blue.name : DEFAULTS.port;
  }

  // Presets speak of node1 (tap-blue-10, the NAT VPC's endpoint there): while the fabric is the
  // sample, switch back to node1 first.
  function ensureNode1(resetEncap) {
    if (state.fabricEdited) return;
    let changed = false;
    if (el.node.value !== DEFAULTS.node) { el.node.value = DEFAULTS.node; changed = true; }
    if (resetEncap) {
      if (el.encap.value !== DEFAULTS.encap) { el.encap.value = DEFAULTS.encap; changed = true; }
      if (el.vni.value !== String(DEFAULTS.vni)) { el.vni.value = DEFAULTS.vni; changed = true; }
    }
    if (changed || !state.sampleText) loadSample();
  }

  function basePacket(portName) {
    const e = endpointOfPort(portName) || {};
    return {
      ...DEFAULTS,
      src_mac: e.mac || DEFAULTS.src_mac,
      src_ip: e.ip || DEFAULTS.src_ip,
      dst_mac: e.gatewayMac || DEFAULTS.dst_mac,
      port: portName,
    };
  }

  const PRESETS = {
    readme() {
      ensureNode1(true);
      const port = bluePort();
      return { ...basePacket(port) };
    },
    ping() {
      ensureNode1(false);
      const port = bluePort();
      const e = endpointOfPort(port) || {};
      return { ...basePacket(port), protocol: 'icmp', dst_ip: e.gateway || '10.0.0.1', src_port: 1, dst_port: 1, payload: 'ping from the playground' };
    },
    arp() {
      ensureNode1(false);
      return { ...basePacket(bluePort()), protocol: 'arp', dst_mac: 'ff:ff:ff:ff:ff:ff', dst_ip: '10.0.0.20' };
    },
    spoof() {
      ensureNode1(false);
      return { ...basePacket(bluePort()), src_ip: '10.0.0.99' };
    },
    nat() {
      ensureNode1(false);
      const f = state.fabric;
      const natVpcs = f ? f.vpcs.filter((v) => v.nat) : [];
      const ports = state.ports.length ? state.ports : portsFromFabric(f);
      let port = null;
      for (const v of natVpcs) {
        port = ports.find((p) => p.role === 'tenant' && p.vpc === v.name);
        if (port) break;
      }
      if (!port) {
        showError('pipeline', natVpcs.length
          ? `No endpoint of the NAT VPC (${natVpcs.map((v) => v.name).join(', ')}) has a port on ${f.node || 'this node'}.`
          : 'The fabric has no VPC with [vpc.nat]: nothing here reaches the Internet.');
        return null;
      }
      return { ...basePacket(port.name), dst_ip: INTERNET_HOST };
    },
  };

  function applyPreset(name) {
    const values = PRESETS[name] && PRESETS[name]();
    if (!values) { finishRun(); return; }
    setForm(values);
    runNow();
  }

  // ------------------------------------------------------------------ running
  function scheduleRun(delay = DEBOUNCE_MS) {
    setBusy(true);
    clearTimeout(state.timer);
    state.timer = setTimeout(runNow, delay);
  }

  function runNow() {
    clearTimeout(state.timer);
    state.timer = null;
    setBusy(true);
    try {
      doRun();
    } catch (e) {
      showError('pipeline', `The page failed: ${e && e.message ? e.message : e}`);
      console.error(e);
    } finally {
      finishRun();
    }
  }

  function finishRun() {
    state.runs += 1;
    body.dataset.runs = String(state.runs);
    if (!state.timer) setBusy(false);
  }

  function markStale(stale) {
    el.results.classList.toggle('stale', stale);
    if (stale && !state.rendered) {
      el.verdict.textContent = 'no result';
      el.verdict.className = 'verdict v-none';
      el.summary.textContent = 'Nothing ran: see the error above.';
    }
  }

  function doRun() {
    if (!state.call) return;
    const { packet, problems } = readPacket();
    if (problems.length) { showError('pipeline', problems.join(' ')); markStale(true); return; }
    const built = api({ op: 'build', packet });
    if (!built.ok) { showError('pipeline', built.error); markStale(true); return; }
    const port = el.port.value || DEFAULTS.port;
    const request = { op: 'run', fabric: el.fabric.value, port, hex: built.hex };
    const underlayMac = el.underlayMac.value.trim();
    if (underlayMac) request.underlay_mac = underlayMac;
    const res = api(request);
    if (!res.ok) { showError('pipeline', res.error); markStale(true); return; }
    showError('pipeline', null);
    markStale(false);
    if (Array.isArray(res.ports) && res.ports.length) setPorts(res.ports);
    renderRun(res, port);
  }

  function renderRun(res, port) {
    state.rendered = true;
    const verdict = String(res.verdict || 'unknown');
    el.verdict.textContent = verdict;
    el.verdict.className = `verdict v-${/^[a-z_]+$/.test(verdict) ? verdict : 'unknown'}`;
    el.summary.textContent = res.summary || '';
    if (res.drop) {
      el.dropBox.hidden = false;
      el.dropReason.textContent = res.drop.reason || '';
      el.dropLayer.textContent = res.drop.layer || '';
      el.dropDescription.textContent = res.drop.description || '';
    } else {
      el.dropBox.hidden = true;
      el.dropReason.textContent = el.dropLayer.textContent = el.dropDescription.textContent = '';
    }
    el.runNode.textContent = res.node || '';
    el.onNode.hidden = !res.node;
    if (res.flow) {
      el.flowBox.hidden = false;
      el.flowHash.textContent = res.flow.hash != null ? String(res.flow.hash) : '';
      el.sourcePort.textContent = res.flow.source_port != null ? String(res.flow.source_port) : '';
    } else {
      el.flowBox.hidden = true;
      el.flowHash.textContent = el.sourcePort.textContent = '';
    }

    const ingress = state.ports.find((p) => p.name === port);
    const cards = [];
    if (res.input) {
      cards.push(frameCard(res.input, {
        role: 'input', port,
        title: `In on ${port}`,
        subtitle: ingress ? portSubtitle(ingress) : '',
      }));
    }
    const emissions = Array.isArray(res.emissions) ? res.emissions : [];
    emissions.forEach((e, i) => {
      const p = state.ports.find((x) => x.name === e.port) || { name: e.port, role: e.role };
      const diff = res.input ? changedBytes(res.input, e.frame || {}) : null;
      cards.push(frameCard(e.frame || {}, {
        role: 'emission', port: e.port,
        title: `Out on ${e.port}`,
        subtitle: portSubtitle({ ...p, role: e.role || p.role }) +
          (emissions.length > 1 ? ` · ${i + 1} of ${emissions.length}` : '') +
          (diff ? ` · ${diff.summary}` : ''),
        changed: diff && diff.changed,
      }));
    });
    el.frames.replaceChildren(...cards);
    if (!emissions.length) {
      const note = document.createElement('p');
      note.className = 'nothing-out';
      note.textContent = verdict === 'drop' ? 'Nothing leaves the node: the frame was dropped.' : 'Nothing leaves the node.';
      el.frames.appendChild(note);
    }
  }

  function portSubtitle(p) {
    if (p.role !== 'tenant') return p.role;
    return `tenant ${p.endpoint || ''}${p.vpc ? ` (${p.vpc})` : ''}`.trim();
  }

  // Which bytes of an emitted frame differ from the input: compared in place when the lengths
  // match (a rewrite: delivery, a reply, NAT), or against the emission's inner frame when that is
  // the input's length (encapsulation). Null when the two do not line up.
  function changedBytes(input, frame) {
    const a = bytesOfHex(input.hex), b = bytesOfHex(frame.hex);
    let base = null;
    if (a.length === b.length) base = 0;
    else {
      const inner = (frame.layers || []).find((l) => l.layer === 'inner_frame' && Number(l.length) === a.length);
      if (inner) base = Number(inner.offset);
    }
    if (base === null || !a.length || base + a.length > b.length) return null;
    const changed = new Uint8Array(b.length);
    let count = 0;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[base + i]) { changed[base + i] = 1; count++; }
    const what = `${count} byte${count === 1 ? '' : 's'}`;
    const summary = base === 0
      ? (count ? `${what} rewritten (underlined)` : 'the input, unchanged')
      : (count ? `the input encapsulated, ${what} of it rewritten (underlined)` : 'the input encapsulated, unchanged');
    return { changed, count, summary };
  }

  function bytesOfHex(hex) {
    hex = String(hex || '');
    const out = new Uint8Array(hex.length >> 1);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
    return out;
  }

  // ------------------------------------------------------------------ the frame card
  // Layers are coloured per kind (hue in the CSS); layers inside an overlay's inner frame are
  // marked nested so outer and inner Ethernet/IPv4/UDP differ in tone.
  function nestingLevels(layers) {
    const stack = [];
    return layers.map((l) => {
      while (stack.length && stack[stack.length - 1] >= l.depth) stack.pop();
      const level = stack.length;
      if (l.layer === 'inner_frame' || l.layer === 'original_datagram') stack.push(l.depth);
      return level;
    });
  }

  // For each byte, the layer it belongs to: the deepest layer containing it (then the smaller).
  function byteOwners(layers, length) {
    const owner = new Int32Array(length).fill(-1);
    layers.forEach((l, i) => {
      const start = Math.max(0, l.offset | 0), end = Math.min(length, start + (l.length | 0));
      for (let b = start; b < end; b++) {
        const j = owner[b];
        if (j < 0 || l.depth > layers[j].depth || (l.depth === layers[j].depth && l.length <= layers[j].length)) owner[b] = i;
      }
    });
    return owner;
  }

  function fieldAt(layer, b) {
    let best = -1;
    (layer.fields || []).forEach((f, k) => {
      if (b >= f.offset && b < f.offset + f.length && (best < 0 || f.length < layer.fields[best].length)) best = k;
    });
    return best;
  }

  function frameCard(frame, { role, port, title, subtitle, index, changed }) {
    const hex = String(frame.hex || '').toLowerCase();
    const bytes = Array.from(bytesOfHex(hex));
    const layers = Array.isArray(frame.layers) ? frame.layers.map((l) => ({
      ...l,
      offset: Number(l.offset) || 0,
      length: Number(l.length) || 0,
      depth: Number(l.depth) || 0,
      fields: (Array.isArray(l.fields) ? l.fields : []).map((f) => ({ ...f, offset: Number(f.offset) || 0, length: Number(f.length) || 0 })),
    })) : [];
    const levels = nestingLevels(layers);
    const owners = byteOwners(layers, bytes.length);

    const card = document.createElement('article');
    card.className = 'frame-card';
    card.dataset.role = role;
    if (port != null) card.dataset.port = port;
    if (index != null) card.dataset.index = String(index);

    const length = frame.length != null ? frame.length : bytes.length;
    const kindKey = role === 'decoded' ? 'decoded' : role;
    const open = !!state.inspectOpen[kindKey];
    const titleId = `card-${Math.random().toString(36).slice(2, 9)}`;

    // Layers, each with its fields.
    let layerHtml = '';
    layers.forEach((l, i) => {
      const kind = /^[a-z0-9_]+$/.test(l.layer || '') ? l.layer : 'unknown';
      const ck = l.checksum_ok === true ? '<span class="ck ok" title="checksum verifies" aria-label="checksum ok">✓</span>'
        : l.checksum_ok === false ? '<span class="ck bad" title="checksum does not verify" aria-label="checksum bad">✗</span>' : '';
      let fieldsHtml = '';
      l.fields.forEach((f, k) => {
        const raw = bytes.slice(f.offset, f.offset + f.length).map(hex2).join(' ');
        const value = f.value != null && f.value !== '' ? `<span class="fv">${escapeHtml(f.value)}</span>` : '';
        fieldsHtml += `<li class="field" tabindex="-1" data-layer-index="${i}" data-field-index="${k}" data-offset="${f.offset}" data-length="${f.length}">` +
          `<span class="fn">${escapeHtml(f.name)}</span>${value}<span class="fb">${escapeHtml(raw.length > 48 ? raw.slice(0, 47) + '…' : raw)}</span></li>`;
      });
      layerHtml += `<li class="layer k-${kind}${levels[i] ? ` nest nest${Math.min(levels[i], 2)}` : ''}" tabindex="0" style="--depth:${l.depth}"` +
        ` data-index="${i}" data-layer="${escapeHtml(kind)}" data-depth="${l.depth}" data-offset="${l.offset}" data-length="${l.length}"` +
        ` aria-label="${escapeHtml(`${l.text} (bytes ${l.offset} to ${l.offset + l.length - 1})`)}">` +
        `<div class="layer-line"><span class="swatch" aria-hidden="true"></span><span class="lt">${escapeHtml(l.text)}</span>${ck}` +
        `<span class="range">${l.offset}+${l.length}</span></div>` +
        (fieldsHtml ? `<ul class="fields">${fieldsHtml}</ul>` : '') + '</li>';
    });

    // The hex dump: 16 bytes a row, offset, hex, ASCII.
    let rows = '';
    for (let r = 0; r < bytes.length; r += 16) {
      let hx = '', asc = '';
      for (let b = r; b < Math.min(r + 16, bytes.length); b++) {
        const o = owners[b];
        const cls = o >= 0 ? `k-${/^[a-z0-9_]+$/.test(layers[o].layer || '') ? layers[o].layer : 'unknown'}${levels[o] ? ` nest nest${Math.min(levels[o], 2)}` : ''}` : 'k-none';
        const c = bytes[b];
        const ch = changed && changed[b] ? ' changed' : '';
        hx += `<span class="byte ${cls}${ch}${(b & 15) === 7 ? ' gap' : ''}" data-index="${b}">${hex2(c)}</span>`;
        asc += `<span class="chr ${cls}" data-index="${b}">${c >= 0x20 && c < 0x7f ? escapeHtml(String.fromCharCode(c)) : '.'}</span>`;
      }
      rows += `<div class="hrow"><span class="off">${r.toString(16).padStart(4, '0')}</span><span class="hx">${hx}</span><span class="asc">${asc}</span></div>`;
    }

    const errorHtml = frame.error ? `<p class="frame-error">! ${escapeHtml(frame.error)}</p>` : '';
    card.innerHTML =
      `<header class="card-head"><div class="card-title"><h3 id="${titleId}">${escapeHtml(title)}</h3>` +
      (subtitle ? `<span class="card-sub">${escapeHtml(subtitle)}</span>` : '') + '</div>' +
      `<span class="card-len">${length} bytes</span>` +
      '<button type="button" class="copy-hex small" aria-label="Copy this frame as hex">Copy hex</button></header>' +
      errorHtml +
      `<ol class="layers" aria-label="Layers of ${escapeHtml(title)}">${layerHtml}</ol>` +
      `<div class="hex mono" data-hex="${escapeHtml(hex)}" role="group" aria-label="Bytes of ${escapeHtml(title)}">${rows}</div>` +
      `<details class="inspect"${open ? ' open' : ''}><summary>as <span class="mono">andromedactl inspect</span> prints it</summary>` +
      '<pre class="inspect-text mono"></pre></details>';
    card.setAttribute('aria-labelledby', titleId);
    // textContent keeps the text byte for byte (no HTML parsing of it).
    $('.inspect-text', card).textContent = frame.text != null ? String(frame.text) : '';
    $('details.inspect', card).addEventListener('toggle', (ev) => { state.inspectOpen[kindKey] = ev.target.open; });

    wireCard(card, { hex, layers, owners, bytes });
    return card;
  }

  function wireCard(card, model) {
    const byteEls = $$('.byte', card);
    const chrEls = $$('.chr', card);
    const layerEls = $$('.layer', card);
    const fieldEls = $$('.field', card);
    let lit = [];  // [element, class] pairs currently lit

    const clear = () => {
      for (const [e, c] of lit) e.classList.remove(c);
      lit = [];
    };
    const light = (e, c) => { if (e) { e.classList.add(c); lit.push([e, c]); } };
    const lightRange = (offset, length, c) => {
      const end = Math.min(byteEls.length, offset + length);
      for (let b = Math.max(0, offset); b < end; b++) { light(byteEls[b], c); light(chrEls[b], c); }
    };
    const showLayer = (i) => {
      const l = model.layers[i];
      if (!l) return;
      light(layerEls[i], 'active');
      lightRange(l.offset, l.length, 'hl-layer');
    };
    const showField = (i, k) => {
      const f = model.layers[i] && model.layers[i].fields[k];
      if (!f) return;
      showLayer(i);
      light(fieldEls.find((e) => e.dataset.layerIndex === String(i) && e.dataset.fieldIndex === String(k)), 'active');
      lightRange(f.offset, f.length, 'hl-field');
    };
    const showByte = (b) => {
      const i = model.owners[b];
      if (i == null || i < 0) { light(byteEls[b], 'hl-field'); light(chrEls[b], 'hl-field'); return; }
      const k = fieldAt(model.layers[i], b);
      if (k >= 0) showField(i, k); else showLayer(i);
    };
    const target = (node) => {
      if (!(node instanceof Element)) return null;
      const t = node.closest('.field, .layer, .byte, .chr');
      return t && card.contains(t) ? t : null;
    };
    const show = (t) => {
      clear();
      if (!t) return;
      if (t.classList.contains('field')) showField(Number(t.dataset.layerIndex), Number(t.dataset.fieldIndex));
      else if (t.classList.contains('layer')) showLayer(Number(t.dataset.index));
      else showByte(Number(t.dataset.index));
    };

    card.addEventListener('mouseover', (ev) => show(target(ev.target)));
    card.addEventListener('mouseleave', () => {
      const f = document.activeElement;
      show(f && card.contains(f) ? target(f) : null);
    });
    card.addEventListener('focusin', (ev) => show(target(ev.target)));
    card.addEventListener('focusout', (ev) => { if (!card.contains(ev.relatedTarget)) clear(); });

    // Arrow keys walk the layers and their fields; Escape leaves the highlight.
    const items = $$('.layer, .field', card);
    card.addEventListener('keydown', (ev) => {
      const t = ev.target;
      if (!(t instanceof Element) || !t.matches('.layer, .field')) return;
      const i = items.indexOf(t);
      let next = null;
      if (ev.key === 'ArrowDown') next = items[i + 1];
      else if (ev.key === 'ArrowUp') next = items[i - 1];
      else if (ev.key === 'Home') next = items[0];
      else if (ev.key === 'End') next = items[items.length - 1];
      else if (ev.key === 'Escape') { clear(); t.blur(); ev.preventDefault(); return; }
      if (next) { next.focus(); ev.preventDefault(); }
    });

    $('.copy-hex', card).addEventListener('click', (ev) => copyText(model.hex, ev.currentTarget));
  }

  async function copyText(text, button) {
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(text); ok = true; }
    } catch (e) { ok = false; }
    if (!ok) {
      const ta = document.createElement('textarea');
      ta.value = text;
      ta.setAttribute('readonly', '');
      ta.style.position = 'fixed';
      ta.style.opacity = '0';
      document.body.appendChild(ta);
      ta.select();
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      ta.remove();
    }
    const old = button.dataset.label || button.textContent;
    button.dataset.label = old;
    button.textContent = ok ? 'Copied' : 'Copy failed';
    el.statusLine.textContent = ok ? `Copied ${text.length / 2} bytes as hex.` : 'Could not copy: select the hex in the inspect text instead.';
    setTimeout(() => { button.textContent = old; }, 1200);
  }

  // ------------------------------------------------------------------ decode tab
  // The textarea's frames: paragraphs of hex, '#' lines and a leading "hex" word skipped.
  function hexFrames(text) {
    const frames = [];
    let cur = '';
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.trim();
      if (line.startsWith('#')) continue;
      if (!line) { if (cur) frames.push(cur); cur = ''; continue; }
      cur += line.replace(/^hex\s+/i, '');
    }
    if (cur) frames.push(cur);
    return frames.map((f) => f.replace(/^0x/i, '').replace(/[\s:-]/g, '').toLowerCase()).filter(Boolean);
  }

  function scheduleDecode(delay = 150) {
    setBusy(true);
    clearTimeout(state.decodeTimer);
    state.decodeTimer = setTimeout(decodeText, delay);
  }

  function finishDecode() {
    state.decodes += 1;
    body.dataset.decodes = String(state.decodes);
    if (!state.timer && !state.decodeTimer) setBusy(false);
  }

  function decodeText() {
    clearTimeout(state.decodeTimer);
    state.decodeTimer = null;
    try {
      const frames = hexFrames(el.decodeHex.value);
      if (!frames.length) {
        showError('decode', null);
        el.decodeStatus.textContent = '';
        el.decodeResults.replaceChildren();
        return;
      }
      const decoded = [];
      for (let i = 0; i < frames.length; i++) {
        const res = state.call ? api({ op: 'decode', hex: frames[i] }) : { ok: false, error: 'The pipeline module is not loaded.' };
        if (!res.ok) {
          showError('decode', frames.length > 1 ? `Frame ${i + 1}: ${res.error}` : res.error);
          el.decodeResults.classList.add('stale');
          return;
        }
        for (const f of res.frames || []) decoded.push({ ...f, index: decoded.length + 1 });
      }
      showError('decode', null);
      showDecoded(decoded, decoded.length === 1 ? '1 frame' : `${decoded.length} frames`);
    } finally {
      finishDecode();
    }
  }

  function decodeFile(file) {
    if (!file) return;
    clearTimeout(state.decodeTimer);  // a file replaces whatever the text box was about to decode
    state.decodeTimer = null;
    setBusy(true);
    el.decodeStatus.textContent = `Reading ${file.name}…`;
    const reader = new FileReader();
    reader.onerror = () => {
      showError('decode', `Could not read ${file.name}: ${reader.error && reader.error.message}`);
      finishDecode();
    };
    reader.onload = () => {
      try {
        const bytes = new Uint8Array(reader.result);
        let hex = '';
        const table = Array.from({ length: 256 }, (_, i) => hex2(i));
        const parts = [];
        for (let i = 0; i < bytes.length; i += 65536) {
          hex = '';
          const end = Math.min(bytes.length, i + 65536);
          for (let j = i; j < end; j++) hex += table[bytes[j]];
          parts.push(hex);
        }
        const res = state.call ? api({ op: 'decode_pcap', hex: parts.join('') }) : { ok: false, error: 'The pipeline module is not loaded.' };
        if (!res.ok) {
          showError('decode', `${file.name}: ${res.error}`);
          el.decodeStatus.textContent = '';
          el.decodeResults.classList.add('stale');
          return;
        }
        showError('decode', null);
        const n = (res.frames || []).length;
        showDecoded(res.frames || [], `${file.name}: ${n} frame${n === 1 ? '' : 's'}, ${bytes.length} bytes`);
      } finally {
        finishDecode();
      }
    };
    reader.readAsArrayBuffer(file);
  }

  function showDecoded(frames, status) {
    el.decodeResults.classList.remove('stale');
    el.decodeStatus.textContent = status;
    el.decodeResults.replaceChildren();
    let shown = 0;
    const more = document.createElement('button');
    more.type = 'button';
    more.className = 'more';
    const addBatch = () => {
      const cards = frames.slice(shown, shown + DECODE_BATCH).map((f, k) => {
        const index = f.index != null ? f.index : shown + k + 1;
        return frameCard(f, { role: 'decoded', port: null, index, title: `Frame ${index}`, subtitle: f.error ? 'malformed' : '' });
      });
      shown += cards.length;
      more.remove();
      el.decodeResults.append(...cards);
      if (shown < frames.length) {
        more.textContent = `Show ${Math.min(DECODE_BATCH, frames.length - shown)} more (${frames.length - shown} left)`;
        el.decodeResults.appendChild(more);
      }
    };
    more.addEventListener('click', addBatch);
    addBatch();
  }

  // ------------------------------------------------------------------ tabs
  function selectTab(name, focus) {
    state.tab = name;
    for (const t of ['pipeline', 'decode']) {
      const btn = $(`#tab-btn-${t}`), panel = $(`#tab-${t}`);
      const on = t === name;
      btn.setAttribute('aria-selected', String(on));
      btn.tabIndex = on ? 0 : -1;
      panel.hidden = !on;
      if (on && focus) btn.focus();
    }
    // One error box, shown in the tab in use (the pipeline's next to its results).
    $(`#tab-${name} .error-slot`).appendChild(el.error);
    renderError();
    try {
      if (name === 'decode' && location.hash !== '#decode') history.replaceState(null, '', '#decode');
      if (name === 'pipeline' && location.hash === '#decode') history.replaceState(null, '', location.pathname + location.search);
    } catch (e) { /* some file:// setups refuse it; the tab still switches */ }
  }

  // ------------------------------------------------------------------ events
  function wireEvents() {
    el.form.addEventListener('submit', (ev) => { ev.preventDefault(); runNow(); });
    el.form.addEventListener('input', (ev) => {
      const t = ev.target;
      if (t === el.fabric) {
        setFabricEdited(el.fabric.value !== state.sampleText);
        state.fabric = readFabric(el.fabric.value);
      } else if (t === el.vni || t === el.node || t === el.encap) {
        return;  // handled on change (re-sampling on every VNI keystroke would be too eager)
      }
      if (t === el.payload) updatePayloadCount();
      scheduleRun();
    });
    el.form.addEventListener('change', (ev) => {
      const t = ev.target;
      if (t === el.protocol) updateProtocolUi();
      if (t === el.node || t === el.encap || t === el.vni) {
        if (!state.fabricEdited) loadSample();
        scheduleRun();
      } else if (t.tagName === 'SELECT' || t.type === 'checkbox') {
        scheduleRun();
      }
    });
    // A VNI typed in the number box re-samples after a pause, not per keystroke.
    el.vni.addEventListener('input', () => {
      setBusy(true);
      clearTimeout(state.timer);
      state.timer = setTimeout(() => { state.timer = null; if (!state.fabricEdited && loadSample()) runNow(); else finishRun(); }, 300);
    });
    el.fabricReset.addEventListener('click', () => { if (loadSample()) runNow(); });
    el.usePortEndpoint.addEventListener('click', () => {
      if (!useEndpointOf(el.port.value)) showError('pipeline', `${el.port.value} is not a tenant port: it has no endpoint.`);
      else runNow();
    });
    for (const b of $$('.preset')) b.addEventListener('click', () => applyPreset(b.dataset.preset));

    // Tabs, with arrow keys between them.
    for (const t of ['pipeline', 'decode']) $(`#tab-btn-${t}`).addEventListener('click', () => selectTab(t));
    $('.tabs').addEventListener('keydown', (ev) => {
      if (ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight') return;
      selectTab(state.tab === 'pipeline' ? 'decode' : 'pipeline', true);
      ev.preventDefault();
    });

    el.decodeHex.addEventListener('input', () => scheduleDecode());
    el.decodeRun.addEventListener('click', () => {
      if (el.decodeFile.files && el.decodeFile.files[0] && !el.decodeHex.value.trim()) decodeFile(el.decodeFile.files[0]);
      else decodeText();
    });
    el.decodeFile.addEventListener('change', () => decodeFile(el.decodeFile.files[0]));
    const drop = $('#tab-decode');
    drop.addEventListener('dragover', (ev) => { ev.preventDefault(); el.decodeDrop.classList.add('dragging'); });
    drop.addEventListener('dragleave', (ev) => { if (!drop.contains(ev.relatedTarget)) el.decodeDrop.classList.remove('dragging'); });
    drop.addEventListener('drop', (ev) => {
      ev.preventDefault();
      el.decodeDrop.classList.remove('dragging');
      const file = ev.dataTransfer && ev.dataTransfer.files && ev.dataTransfer.files[0];
      if (file) decodeFile(file);
      else if (ev.dataTransfer) {
        const text = ev.dataTransfer.getData('text/plain');
        if (text) { el.decodeHex.value = text; decodeText(); }
      }
    });
  }

  // ------------------------------------------------------------------ start
  function fail(message) {
    body.dataset.ready = 'error';
    setBusy(false);
    el.verdict.textContent = 'unavailable';
    el.verdict.className = 'verdict v-none';
    el.summary.textContent = '';
    showError('pipeline', message);
    showError('decode', message);
  }

  function start() {
    setForm(DEFAULTS);
    el.node.value = DEFAULTS.node;
    el.encap.value = DEFAULTS.encap;
    el.vni.value = DEFAULTS.vni;
    setPorts([{ name: DEFAULTS.port, role: 'tenant', endpoint: DEFAULTS.src_ip, vpc: 'blue' }]);
    wireEvents();
    if (location.hash === '#decode') selectTab('decode');
    if (typeof window.AndromedaPlayground !== 'function') {
      fail('andromeda_playground.js did not load, so the pipeline is not here. This page needs the WebAssembly build of the pipeline beside it: build the playground (it writes andromeda_playground.js next to index.html) and open that copy of the page.');
      return;
    }
    setBusy(true);
    const started = performance.now();
    let promise;
    try {
      promise = Promise.resolve(window.AndromedaPlayground());
    } catch (e) {
      fail(`The pipeline module did not start: ${e && e.message ? e.message : e}`);
      return;
    }
    promise.then((m) => {
      state.module = m;
      if (!m || typeof m.cwrap !== 'function') throw new Error('the module has no cwrap (it must be built with EXPORTED_RUNTIME_METHODS=cwrap)');
      state.call = m.cwrap('playground_call', 'string', ['string']);
      el.statusLine.textContent = `Pipeline loaded in ${Math.round(performance.now() - started)} ms.`;
      if (loadSample()) {
        setForm(PRESETS.readme());
      }
      runNow();
      body.dataset.ready = '1';
    }).catch((e) => {
      fail(`The pipeline module did not start: ${e && e.message ? e.message : e}`);
    });
  }

  start();
})();
