// The page's JavaScript half: downloads (with progress), the IndexedDB cache and
// the page; every check of a model's bytes and every prediction is done by the Go
// half (apr.wasm, pipelines/browser/wasm) through the global object apr it sets.
"use strict";

const config = JSON.parse(document.getElementById("config").textContent);
const $ = (id) => document.getElementById(id);
// Timings the page shows, and the browser test reads.
window.aprTimings = {};

function say(el, text, state, kind) {
  el.hidden = false;
  el.textContent = text;
  el.className = "msg" + (state === "ok" ? " ok" : state === "error" ? " error" : "");
  el.dataset.state = state;
  el.dataset.kind = kind || "";
}

const mb = (n) => (n / 1e6).toFixed(2) + " MB";

// fetchBytes downloads url into one Uint8Array, moving bar as bytes arrive. total
// is the expected size when known: Content-Length is the compressed size when the
// server compresses, so the page is told the real one in its config.
async function fetchBytes(url, bar, total, onProgress) {
  const resp = await fetch(url, { cache: "no-store" });
  if (!resp.ok) throw new Error(`${url}: HTTP ${resp.status} ${resp.statusText}`);
  const size = total || Number(resp.headers.get("Content-Length")) || 0;
  bar.max = size || 1;
  bar.value = 0;
  const reader = resp.body.getReader();
  const chunks = [];
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    got += value.length;
    if (size) bar.value = Math.min(got, size);
    if (onProgress) onProgress(got, size);
  }
  bar.max = bar.value = 1;
  const out = new Uint8Array(got);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

// The cache: one IndexedDB object store of {name, bytes} keyed by the file's
// SHA-256. A browser without IndexedDB (or one that refuses it) still works,
// downloading every time.
function openCache() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open("apr-models", 1);
    req.onupgradeneeded = () => req.result.createObjectStore("files");
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function cache(mode, op) {
  const db = await openCache();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction("files", mode);
      const req = op(tx.objectStore("files"));
      tx.oncomplete = () => resolve(req.result);
      tx.onerror = tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

window.aprCache = {
  get: (digest) => cache("readonly", (s) => s.get(digest)),
  put: (digest, name, bytes) => cache("readwrite", (s) => s.put({ name, bytes }, digest)),
  keys: () => cache("readonly", (s) => s.getAllKeys()),
  clear: () => cache("readwrite", (s) => s.clear()),
};

// What a failure's kind means to the reader; the Go half's message follows.
const explain = {
  damaged: "This file is damaged (its bytes are not the ones that were written), so nothing was loaded. Download it again or ask for a good copy.",
  "wrong-type": "This is not a model this page can run.",
  signature: "This model is not signed by the key this page trusts, so it was not loaded.",
  input: "Check the rows.",
};

function sayError(el, err) {
  const kind = err.kind || "error";
  say(el, (explain[kind] ? explain[kind] + " " : "") + "(" + err.message + ")", "error", kind);
}

async function startWasm() {
  const bar = $("wasm-progress");
  const status = $("wasm-status");
  const t0 = performance.now();
  const bytes = await fetchBytes(config.wasm.url, bar, config.wasm.size, (got, size) => {
    status.textContent = `Downloading apr.wasm: ${mb(got)} of ${mb(size)}`;
  });
  const t1 = performance.now();
  const ready = new Promise((resolve) => (window.aprReady = resolve));
  const go = new Go();
  const { instance } = await WebAssembly.instantiate(bytes, go.importObject);
  go.run(instance).then(() => say(status, "apr.wasm stopped.", "error"));
  await ready;
  const t2 = performance.now();
  Object.assign(window.aprTimings, { wasmFetchMs: t1 - t0, wasmStartMs: t2 - t1 });
  say(status, `apr ${apr.version} ready: apr.wasm is ${mb(config.wasm.size)} (${mb(config.wasm.gzip)} gzipped), ` +
    `downloaded in ${Math.round(t1 - t0)} ms, compiled and started in ${Math.round(t2 - t1)} ms.`, "ok");
  document.body.dataset.wasm = "ready";
}

function showInfo(info, name, source, ms) {
  const dl = $("model-info");
  dl.replaceChildren();
  const rows = [
    ["file", name],
    ["model", `${info.type}, ${info.features} features` + (info.classes ? `, ${info.classes} classes` : "")],
    ["signed by", info.signer ? `the pinned key (SHA-256 ${info.signer})` : "not checked: no key is pinned"],
    ["SHA-256", info.sha256],
    ["from", source],
    ["verified in", `${ms.toFixed(1)} ms`],
  ];
  for (const [k, v] of rows) {
    const dt = document.createElement("dt");
    const dd = document.createElement("dd");
    dt.textContent = k;
    dd.textContent = v;
    dl.append(dt, dd);
  }
  dl.hidden = false;
}

let current = null; // the loaded model's info

// load checks bytes in the Go half and makes the model current; a failure leaves
// no model loaded (the Go half forgets the previous one too).
async function load(bytes, name, source) {
  const status = $("model-status");
  const t0 = performance.now();
  current = null;
  $("predict").disabled = true;
  $("model-info").hidden = true;
  const info = await apr.load(bytes, config.pinnedKey);
  const ms = performance.now() - t0;
  window.aprTimings.modelVerifyMs = ms;
  window.aprTimings.source = source;
  current = info;
  showInfo(info, name, source, ms);
  status.dataset.source = source;
  say(status, `${name}: every checksum verified` + (info.signer ? " and signed by the pinned key" : "") +
    `; loaded from ${source}.`, "ok");
  $("predict").disabled = false;
  return info;
}

async function loadPublished(entry) {
  const status = $("model-status");
  const bar = $("model-progress");
  say(status, `Loading ${entry.name}…`, "loading");
  status.dataset.source = "";
  try {
    let cached;
    try {
      cached = await aprCache.get(entry.sha256);
    } catch (e) {
      console.warn("IndexedDB unavailable, downloading:", e);
    }
    // A cached file is used only when its bytes still hash to their key.
    if (cached && apr.sha256(cached.bytes) === entry.sha256) {
      bar.max = bar.value = 1;
      window.aprTimings.modelFetchMs = 0;
      await load(cached.bytes, entry.name, "the IndexedDB cache");
      return;
    }
    const t0 = performance.now();
    const bytes = await fetchBytes(entry.url, bar, entry.size, (got, size) => {
      status.textContent = `Downloading ${entry.name}: ${got} of ${size} bytes`;
    });
    window.aprTimings.modelFetchMs = performance.now() - t0;
    const digest = apr.sha256(bytes);
    if (digest !== entry.sha256) {
      const e = new Error(`the download's SHA-256 is ${digest}, the page expected ${entry.sha256}`);
      e.kind = "damaged";
      throw e;
    }
    await load(bytes, entry.name, "the network");
    // Only a file that verified is cached.
    await aprCache.put(entry.sha256, entry.name, bytes).catch((e) => console.warn("not cached:", e));
  } catch (err) {
    sayError(status, err);
  }
}

async function loadLocal(file) {
  const status = $("model-status");
  say(status, `Reading ${file.name}…`, "loading");
  try {
    await load(new Uint8Array(await file.arrayBuffer()), file.name, "a local file");
  } catch (err) {
    sayError(status, err);
  }
}

function showPredictions(preds) {
  const table = $("predictions");
  table.replaceChildren();
  const head = ["row"];
  if (current.classes) {
    head.push("label");
    for (let k = 0; k < current.classes; k++) head.push(`p${k}`);
  } else {
    head.push("value");
  }
  const tr = document.createElement("tr");
  for (const h of head) {
    const th = document.createElement("th");
    th.textContent = h;
    tr.append(th);
  }
  table.append(tr);
  preds.forEach((p, i) => {
    const cells = [i + 1];
    if (current.classes) cells.push(p.label, ...p.proba);
    else cells.push(...(p.values || [p.value]));
    const row = document.createElement("tr");
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = String(c); // the shortest form that reads back to the same number
      row.append(td);
    }
    table.append(row);
  });
  table.hidden = false;
}

async function predictRows() {
  const status = $("predict-status");
  try {
    const t0 = performance.now();
    const preds = await apr.predict($("rows").value);
    window.aprTimings.predictMs = performance.now() - t0;
    showPredictions(preds);
    say(status, `${preds.length} row(s) predicted in ${window.aprTimings.predictMs.toFixed(1)} ms.`, "ok");
  } catch (err) {
    $("predictions").hidden = true;
    sayError(status, err);
  }
}

async function main() {
  const select = $("model-select");
  for (const m of config.models) select.append(new Option(`${m.name} (${m.size} bytes)`, m.name));
  const want = new URLSearchParams(location.search).get("model");
  if (want) select.value = want;
  try {
    await startWasm();
  } catch (err) {
    say($("wasm-status"), `apr.wasm did not start: ${err.message}`, "error");
    document.body.dataset.wasm = "failed";
    return;
  }
  const entry = () => config.models.find((m) => m.name === select.value);
  $("load").onclick = () => loadPublished(entry());
  $("file").onchange = (e) => e.target.files[0] && loadLocal(e.target.files[0]);
  $("forget").onclick = async () => {
    await aprCache.clear();
    say($("model-status"), "The cache is empty: the next load downloads the model.", "ok");
  };
  $("predict").onclick = predictRows;
  for (const id of ["load", "file", "forget"]) $(id).disabled = false;
  // The chosen (or first) model loads at once, from the cache when it is there.
  if (entry()) await loadPublished(entry());
}

main();
