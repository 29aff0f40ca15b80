// The packet playground's page logic: a form builds a frame (op "build"), the WebAssembly
// pipeline runs it (op "run"), and every frame is shown as a layer stack and a hex dump that light
// each other up. Plain ES2020, no framework: it runs from file:// beside andromeda_playground.js.
// The page only renders: the sample fabric (op "sample"), what a fabric holds (op "fabric": its
// ports, gateway MACs, the presets' packets, or the loader's errors) and every verdict come from
// the engine, the daemon's own code; nothing here reads node.toml.
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
    node: $('#node'), encap: $('#encap'), vni: $('#vni'), vniLabel: $('#vni-label'), underlayMac: $('#underlay-mac'),
    presetArp: $('#preset-arp'),
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
    sampleDefaults: null,  // the sample's own view: {node, encap, vni}, as the engine first gave it
    fabricEdited: false,
    fabric: null,          // the engine's answer to "fabric" for the text in the box; null when it does not load
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

  // ------------------------------------------------------------------ the fabric, as the engine read it
  // The engine loads the text with the daemon's loader and answers its nodes, VPCs (gateway MACs
  // derived), endpoints, ports and the presets' packets, or the loader's errors.
  function describeFabric() {
    const res = state.call ? api({ op: 'fabric', fabric: el.fabric.value }) : { ok: false, error: 'The pipeline module is not loaded.' };
    state.fabric = res.ok ? res : null;
    const arp = state.fabric && state.fabric.examples.arp;
    el.presetArp.textContent = arp && arp.packet ? `ARP for ${arp.packet.dst_ip}` : 'ARP request';
    return res;
  }

  // A tenant port as the engine lists it: its endpoint's address and MAC, its VPC, and the
  // gateway address and MAC its tenant sends to.
  function tenantPort(name) {
    const ports = state.fabric ? state.fabric.ports : state.ports;
    return ports.find((p) => p.name === name && p.role === 'tenant') || null;
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
    const current = el.port.value;
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

  // Asks the module for the sample fabric of the chosen node/encap/VNI (the first time, for its
  // own view, which the form then shows). Returns false (and shows the module's sentence) when it
  // refuses.
  function loadSample(first = false) {
    const request = { op: 'sample' };
    if (!first) {
      const vni = readNumber(el.vni, 'The VNI', 1, 16777215);
      if (vni.error) { showError('pipeline', vni.error); return false; }
      Object.assign(request, { node: el.node.value, encap: el.encap.value, vni: vni.value });
    }
    const res = api(request);
    if (!res.ok) { showError('pipeline', res.error); return false; }
    if (first) state.sampleDefaults = { node: res.node, encap: res.encap, vni: res.vni };
    state.sampleText = String(res.fabric);
    el.fabric.value = state.sampleText;
    // The node's own underlay MAC is not in node.toml (andromedad reads it off the NIC): the
    // sample names the one its fabric assumes, and every run passes it on.
    if (typeof res.underlay_mac === 'string') el.underlayMac.value = res.underlay_mac;
    setNodes(res.nodes);
    el.node.value = res.node;
    el.encap.value = res.encap;
    el.vni.value = res.vni;
    el.vniLabel.textContent = res.vni_vpc ? `VNI (${res.vni_vpc})` : 'VNI';
    setFabricEdited(false);
    fabricChanged();
    return true;
  }

  // After the fabric text changed: ask the engine what it holds and, if the chosen port is not on
  // its node, pick one that is (preferring the same VPC).
  function fabricChanged() {
    describeFabric();
    const ports = state.fabric ? state.fabric.ports : [];
    if (!ports.length) return;
    const current = el.port.value;
    if (!ports.some((p) => p.name === current)) {
      const old = state.ports.find((p) => p.name === current);
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
    const p = tenantPort(portName);
    if (!p) return false;
    const oldSrc = el.srcIp.value.trim();
    if (p.mac) el.srcMac.value = p.mac;
    if (p.endpoint) el.srcIp.value = p.endpoint;
    if (swapDestination && el.dstIp.value.trim() === p.endpoint && oldSrc && oldSrc !== p.endpoint) el.dstIp.value = oldSrc;
    if (p.gateway_mac && el.protocol.value !== 'arp') el.dstMac.value = p.gateway_mac;
    return true;
  }

  // ------------------------------------------------------------------ presets
  // Presets speak of the sample's own view: while the fabric is the sample, go back to it first
  // (the README example also to its encapsulation and VNI).
  function ensureDefaultView(resetEncap) {
    const d = state.sampleDefaults;
    if (state.fabricEdited || !d) return;
    let changed = false;
    if (el.node.value !== d.node) { el.node.value = d.node; changed = true; }
    if (resetEncap) {
      if (el.encap.value !== d.encap) { el.encap.value = d.encap; changed = true; }
      if (el.vni.value !== String(d.vni)) { el.vni.value = d.vni; changed = true; }
    }
    if (changed || !state.sampleText) loadSample();
  }

  // A preset's form values: the engine's packet for it in the fabric the page holds, or null
  // (and the engine's reason shown) when that fabric has none.
  function presetValues(name) {
    ensureDefaultView(name === 'readme');
    if (!state.fabric) {
      const res = describeFabric();
      if (!res.ok) { showError('pipeline', res.error); return null; }
    }
    const e = state.fabric.examples[name];
    if (!e || e.error) { showError('pipeline', e ? e.error : `There is no preset "${name}".`); return null; }
    return { ...e.packet, port: e.port };
  }

  function applyPreset(name) {
    const values = presetValues(name);
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
    const port = el.port.value;
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
        describeFabric();
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
    updateProtocolUi();
    updatePayloadCount();
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
      if (loadSample(true)) {
        const readme = presetValues('readme');
        if (readme) setForm(readme);
      }
      runNow();
      body.dataset.ready = '1';
    }).catch((e) => {
      fail(`The pipeline module did not start: ${e && e.message ? e.message : e}`);
    });
  }

  start();
})();
