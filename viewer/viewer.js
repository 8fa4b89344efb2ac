// attn view: the page's script (plain JS, inlined by `attn view`; no network, no library).
// It reads the JSON document in <script id="attn-data"> (src/viz/html_view.cpp writes it,
// docs/viewer.md describes it) and draws one of two kinds of page:
//   "attention"  heatmap (matrix), head view and model view of every attention map of each
//                hypothesis; for classifiers, tokens shaded by attention / importance; for ASR
//                (DATA.speech) the log-mel spectrogram under the heatmap and the stop marks
//   "run"        training curves of log.jsonl files, and a sweep's accuracy by length
// Token text only ever reaches the page through textContent or canvas fillText, never as
// HTML. window.attnView exposes the state and the drawn counts to the browser tests.
'use strict';
(function () {
  const DATA = JSON.parse(document.getElementById('attn-data').textContent);
  const $ = (tag, props = {}, children = []) => {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === 'text') el.textContent = v;
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k in el && k !== 'style') el[k] = v;
      else el.setAttribute(k, v);
    }
    for (const c of children) if (c) el.appendChild(c);
    return el;
  };
  const dpr = () => window.devicePixelRatio || 1;

  // ---- colours: viridis (matplotlib's, by the polynomial fit of its table), 256 steps.
  const VIRIDIS = (() => {
    const c = [[0.2777273272234177, 0.005407344544966578, 0.3340998053353061],
      [0.1050930431085774, 1.404613529898575, 1.384590162594685],
      [-0.3308618287255563, 0.214847559468213, 0.09509516302823659],
      [-4.634230498983486, -5.799100973351585, -19.33244095627987],
      [6.228269936347081, 14.17993336680509, 56.69055260068105],
      [4.776384997670288, -13.74514537774601, -65.35303263337234],
      [-5.435455855934631, 4.645852612178535, 26.3124352495832]];
    const table = [];
    for (let i = 0; i < 256; i++) {
      const t = i / 255;
      table.push([0, 1, 2].map((k) => {
        let v = c[6][k];
        for (let j = 5; j >= 0; j--) v = c[j][k] + t * v;
        return Math.round(255 * Math.min(1, Math.max(0, v)));
      }));
    }
    return table;
  })();
  const viridis = (t) => VIRIDIS[Math.max(0, Math.min(255, Math.round(t * 255)))];
  const css = (rgb) => `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
  const HEAD_COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
    '#bcbd22', '#17becf', '#393b79', '#637939', '#8c6d31', '#843c39', '#7b4173', '#3182bd'];
  const headColour = (h) => HEAD_COLOURS[h % HEAD_COLOURS.length];
  const fmt = (w) => w.toFixed(7);

  // ---- packed weights: base64 of zlib-deflated 24-bit fixed point (html_view.h).
  async function unpack(b64, count) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'));
    const raw = new Uint8Array(await new Response(stream).arrayBuffer());
    if (raw.length !== 3 * count) throw new Error(`attention data: expected ${3 * count} bytes, got ${raw.length}`);
    const out = new Float64Array(count);
    for (let i = 0; i < count; i++) out[i] = (raw[3 * i] | (raw[3 * i + 1] << 8) | (raw[3 * i + 2] << 16)) / 16777215;
    return out;
  }

  // ---- downloads (PNG, SVG, JSON): a blob: or data: link clicked, nothing leaves the page.
  function download(name, blob) {
    const url = URL.createObjectURL(blob);
    const a = $('a', { href: url, download: name });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
  const xml = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  function exportButtons(view) {
    const png = () => {
      const canvas = view.toCanvas();
      const url = canvas.toDataURL('image/png');
      window.attnView.lastPng = url;
      canvas.toBlob((b) => download(`${view.name}.png`, b), 'image/png');
    };
    const svg = () => {
      const text = view.toSVG();
      window.attnView.lastSvg = text;
      download(`${view.name}.svg`, new Blob([text], { type: 'image/svg+xml' }));
    };
    const json = () => {
      const text = JSON.stringify(view.toJSON());
      window.attnView.lastJson = text;
      download(`${view.name}.json`, new Blob([text], { type: 'application/json' }));
    };
    return $('span', { className: 'group' }, [
      $('button', { text: 'export PNG', dataset: { export: 'png' }, on: { click: png } }),
      $('button', { text: 'export SVG', dataset: { export: 'svg' }, on: { click: svg } }),
      $('button', { text: 'export JSON', dataset: { export: 'json' }, on: { click: json } })]);
  }

  // ---- tooltip
  const tooltip = document.getElementById('tooltip');
  function showTip(ev, text, data) {
    tooltip.textContent = text;
    tooltip.hidden = false;
    for (const k of Object.keys(tooltip.dataset)) delete tooltip.dataset[k];
    Object.assign(tooltip.dataset, data || {});
    const x = Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 4);
    const y = Math.min(ev.clientY + 14, window.innerHeight - tooltip.offsetHeight - 4);
    // A transform moves it on the compositor, without repainting the canvas below.
    tooltip.style.transform = `translate(${Math.max(0, x)}px, ${Math.max(0, y)}px)`;
  }
  const hideTip = () => { tooltip.hidden = true; };

  // A canvas sized in CSS pixels, drawn at the device's resolution.
  function sizedCanvas(canvas, w, h) {
    const r = dpr();
    canvas.width = Math.max(1, Math.round(w * r));
    canvas.height = Math.max(1, Math.round(h * r));
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    // A CPU-backed canvas: drawn once per change and read back for exports, it rasterises
    // thousands of lines faster than a GPU-backed one does without a GPU.
    const g = canvas.getContext('2d', { willReadFrequently: true });
    g.setTransform(r, 0, 0, r, 0, 0);
    return g;
  }
  const LABEL_FONT = '12px system-ui, sans-serif';
  function labelWidth(labels) {
    const g = document.createElement('canvas').getContext('2d');
    g.font = LABEL_FONT;
    let w = 0;
    for (const l of labels) w = Math.max(w, g.measureText(l).width);
    return Math.min(160, Math.ceil(w) + 8);
  }

  // =========================================================================================
  // Attention pages
  // =========================================================================================
  function attentionPage(root, controls) {
    const hyps = DATA.hypotheses;
    const state = { hyp: 0, map: 0, layer: 0, head: 0, mode: 'matrix', zoom: 0, pinned: null, shown: null };
    const api = window.attnView;
    const drawn = api.drawn;
    api.state = state;
    api.drawn = drawn;
    const currentMap = () => hyps[state.hyp].maps[state.map];
    // The matrix of (layer, head) of the current map; head -1: the mean over heads.
    function matrix(m, layer, head) {
      const R = m.rows.length, C = m.cols.length, n = R * C;
      if (head >= 0) return m.values.subarray(((layer * m.heads) + head) * n, ((layer * m.heads) + head + 1) * n);
      const mean = new Float64Array(n);
      for (let h = 0; h < m.heads; h++) {
        const w = m.values.subarray(((layer * m.heads) + h) * n, ((layer * m.heads) + h + 1) * n);
        for (let i = 0; i < n; i++) mean[i] += w[i] / m.heads;
      }
      return mean;
    }
    api.matrix = () => Array.from(matrix(currentMap(), state.layer, state.head));

    // ---- controls
    const select = (id, label, options, onChange) => {
      const s = $('select', { id, on: { change: () => onChange(Number(s.value)) } },
        options.map((o, i) => $('option', { value: String(i), text: o })));
      return { el: $('label', {}, [document.createTextNode(label), s]), select: s };
    };
    const hypSel = select('hypothesis', DATA.kind === 'run' ? 'model ' : 'output ', hyps.map((h) => `${h.name}: ${h.text}`), (v) => { state.hyp = v; clamp(); rebuildSelects(); render(); });
    if (hyps.length < 2) hypSel.el.hidden = true;
    let mapSel, layerSel, headSel;
    const modeButtons = {};
    const modes = [['matrix', 'heatmap'], ['heads', 'head view'], ['model', 'model view']];
    const modeGroup = $('span', { className: 'group', role: 'group', 'aria-label': 'view' }, modes.map(([m, label]) => {
      modeButtons[m] = $('button', { id: `mode-${m}`, text: label, on: { click: () => { state.mode = m; render(); } } });
      return modeButtons[m];
    }));
    const zoom = $('input', { id: 'zoom', type: 'range', min: '-3', max: '4', step: '1', value: '0',
      on: { input: () => { state.zoom = Number(zoom.value); render(); } } });
    const headChecks = $('span', { className: 'group heads', id: 'head-checks' });
    function rebuildSelects() {
      const m = currentMap();
      const maps = hyps[state.hyp].maps;
      const fresh = [
        select('map', 'attention ', maps.map((x) => x.name), (v) => { state.map = v; clamp(); rebuildSelects(); render(); }),
        select('layer', 'layer ', Array.from({ length: m.layers }, (_, l) => String(l)), (v) => { state.layer = v; render(); }),
        select('head', 'head ', ['mean over heads'].concat(Array.from({ length: m.heads }, (_, h) => String(h))),
          (v) => { state.head = v - 1; render(); })];
      for (const [old, nu] of [[mapSel, fresh[0]], [layerSel, fresh[1]], [headSel, fresh[2]]])
        if (old) old.el.replaceWith(nu.el);
      [mapSel, layerSel, headSel] = fresh;
      if (!controls.contains(mapSel.el)) for (const s of fresh) controls.insertBefore(s.el, modeGroup);
      mapSel.el.hidden = maps.length < 2;
      headChecks.replaceChildren(...Array.from({ length: m.heads }, (_, h) => {
        const box = $('input', { type: 'checkbox', checked: state.shown === null || state.shown.has(h), dataset: { head: String(h) },
          on: { change: () => { state.shown = new Set([...headChecks.querySelectorAll('input')].filter((b) => b.checked).map((b) => Number(b.dataset.head))); render(); } } });
        return $('label', {}, [box, $('span', { className: 'swatch', style: `background:${headColour(h)}` }), document.createTextNode(String(h))]);
      }));
    }
    function clamp() {
      const m = currentMap() || hyps[state.hyp].maps[0];
      if (!currentMap()) state.map = 0;
      state.layer = Math.min(state.layer, m.layers - 1);
      state.head = Math.min(state.head, m.heads - 1);
      state.pinned = null;
    }
    controls.append(hypSel.el);
    controls.append(modeGroup, $('label', {}, [document.createTextNode('zoom '), zoom]), headChecks);
    rebuildSelects();

    const view = $('div', { id: 'view' });
    const note = $('p', { className: 'note', id: 'note' });
    const legend = legendEl();
    root.append(view);
    let current = null, previous = null;
    const exportSlot = $('span');
    controls.append(exportSlot);

    function render() {
      const t0 = performance.now();
      hideTip();  // it described the view being replaced
      const m = currentMap();
      mapSel.select.value = String(state.map);
      layerSel.select.value = String(state.layer);
      headSel.select.value = String(state.head + 1);
      hypSel.select.value = String(state.hyp);
      zoom.value = String(state.zoom);
      for (const [k, b] of Object.entries(modeButtons)) b.setAttribute('aria-pressed', String(k === state.mode));
      headChecks.hidden = state.mode !== 'heads';
      layerSel.el.hidden = state.mode === 'model';
      headSel.el.hidden = state.mode !== 'matrix';
      const pieces = [];
      current = state.mode === 'matrix' ? matrixView(m) : state.mode === 'heads' ? headView(m) : modelView(m);
      pieces.push(current.el);
      note.textContent = `${m.name} attention · ${m.layers} layer(s) × ${m.heads} head(s) · ${m.rows.length} queries × ${m.cols.length} keys` +
        (state.mode === 'heads' ? ' · click a token to pin it' : state.mode === 'model' ? ' · click a panel to open it' : ' · hover a cell');
      if (state.mode === 'heads' && drawn.capped) note.textContent += ` · at most the ${drawn.capped} strongest lines per head`;
      if (previous && previous.unmount) previous.unmount();
      if (DATA.speech) pieces.unshift(speechInfo(hyps[state.hyp], m.cols.length));
      view.replaceChildren(note, legend, ...pieces);
      previous = current;
      if (current.mounted) current.mounted();
      exportSlot.replaceChildren(exportButtons(current));
      drawn.mode = state.mode;
      drawn.renderMs = performance.now() - t0;
      document.body.dataset.mode = state.mode;
    }

    // ---- heatmap: rows (queries) × cols (keys) on one canvas, labels on both axes.
    function cellSize(m) {
      // At least 10 px a cell, so that 200 tokens keep readable labels (the box scrolls).
      const base = Math.max(10, Math.min(28, Math.floor(640 / Math.max(m.rows.length, m.cols.length))));
      return Math.max(2, Math.round(base * Math.pow(1.35, state.zoom)));
    }
    // The matrix at one pixel a cell (a C × R canvas of viridis colours), cached per matrix:
    // redraws scale it up, and only the part in view.
    const cellImages = new Map();
    function cellImage(key, w, R, C) {
      let small = cellImages.get(key);
      if (small) return small;
      small = document.createElement('canvas');
      small.width = C; small.height = R;
      const g = small.getContext('2d');
      const img = g.createImageData(C, R);
      for (let i = 0; i < R * C; i++) {
        const c = viridis(w[i]);
        img.data[4 * i] = c[0]; img.data[4 * i + 1] = c[1]; img.data[4 * i + 2] = c[2]; img.data[4 * i + 3] = 255;
      }
      g.putImageData(img, 0, 0);
      if (cellImages.size > 64) cellImages.delete(cellImages.keys().next().value);
      cellImages.set(key, small);
      return small;
    }
    const labelWidths = new Map();
    const labelWidthOf = (labels) => {
      if (!labelWidths.has(labels)) labelWidths.set(labels, labelWidth(labels));
      return labelWidths.get(labels);
    };
    // A picture of fullW × fullH CSS pixels in a scrolling box, drawn by
    // paint(g, x0, y0, vw, vh): the part [x0, x0 + vw) × [y0, y0 + vh) at g's origin. The box
    // shows one canvas the size of its visible part, which moves with the scroll, so a redraw
    // paints what is in view, not the whole picture (about 2,200 px square at 200 tokens).
    // That canvas is kept from one render to the next (per id): allocating a canvas's
    // backing store is the slow part of a redraw. Pointer listeners go on the sizer (new each
    // render), which spans the whole picture.
    const viewCanvases = {};
    function scrolledPicture(id, label, fullW, fullH, paint) {
      const vc = viewCanvases[id] || (viewCanvases[id] = { canvas: $('canvas', { id, tabIndex: 0 }), g: null, w: 0, h: 0, r: 0 });
      const canvas = vc.canvas;
      canvas.setAttribute('aria-label', label);
      const sizer = $('div', { className: 'sizer', style: `width:${fullW}px;height:${fullH}px` }, [canvas]);
      const box = $('div', { className: 'scroll' }, [sizer]);
      const repaint = () => {
        if (!box.isConnected) return;
        const x0 = box.scrollLeft, y0 = box.scrollTop;
        const w = Math.min(fullW, box.clientWidth || fullW), h = Math.min(fullH, box.clientHeight || fullH);
        if (!vc.g || w !== vc.w || h !== vc.h || dpr() !== vc.r) {
          vc.w = w; vc.h = h; vc.r = dpr();
          vc.g = sizedCanvas(canvas, w, h);
        }
        canvas.style.transform = `translate(${x0}px, ${y0}px)`;
        vc.g.setTransform(vc.r, 0, 0, vc.r, 0, 0);
        paint(vc.g, x0, y0, w, h);
        drawn.painted = w * h;
      };
      box.addEventListener('scroll', repaint, { passive: true });
      window.addEventListener('resize', repaint, { passive: true });
      return {
        box, sizer, repaint,
        unmount: () => window.removeEventListener('resize', repaint),
        // The whole picture on a canvas of its own (the PNG export).
        full: () => {
          const c = document.createElement('canvas');
          paint(sizedCanvas(c, fullW, fullH), 0, 0, fullW, fullH);
          return c;
        },
      };
    }
    function matrixView(m) {
      const w = matrix(m, state.layer, state.head);
      const R = m.rows.length, C = m.cols.length, cell = cellSize(m);
      const left = labelWidthOf(m.rows), top = labelWidthOf(m.cols);
      // ASR: the spectrogram strip under the cells, on their time axis, and the stop marks.
      const strip = speechStrip(m), stops = strip ? (hyps[state.hyp].stops || []) : [];
      const fullW = left + C * cell, fullH = top + R * cell + (strip ? STRIP_GAP + STRIP_H : 0);
      const stripTop = top + R * cell + STRIP_GAP;
      const small = cellImage(`${state.hyp}/${state.map}/${state.layer}/${state.head}`, w, R, C);
      // Draws the part [x0, x0 + vw) × [y0, y0 + vh) of the picture into g, at g's origin.
      const paint = (g, x0, y0, vw, vh) => {
        g.save();
        g.translate(-x0, -y0);
        g.fillStyle = '#fff';
        g.fillRect(x0, y0, vw, vh);
        const c0 = Math.max(0, Math.floor((x0 - left) / cell)), c1 = Math.min(C, Math.ceil((x0 + vw - left) / cell));
        const r0 = Math.max(0, Math.floor((y0 - top) / cell)), r1 = Math.min(R, Math.ceil((y0 + vh - top) / cell));
        g.imageSmoothingEnabled = false;
        if (c1 > c0 && r1 > r0) g.drawImage(small, c0, r0, c1 - c0, r1 - r0, left + c0 * cell, top + r0 * cell, (c1 - c0) * cell, (r1 - r0) * cell);
        if (x0 < left) drawRowLabels(g, m.rows, left, top, cell, r0, r1);
        if (y0 < top) drawColLabels(g, m.cols, left, top, cell, c0, c1);
        if (strip) paintStrip(g, c0, c1);
        g.restore();
      };
      // Listener frame c covers input frames [c·r, (c + 1)·r): r strip columns to a cell. A red
      // dot in the cell where each step stopped, and a red tick above its frame on the strip.
      const paintStrip = (g, c0, c1) => {
        const r = strip.reduction;
        g.imageSmoothingEnabled = false;
        if (c1 > c0) g.drawImage(strip.image, c0 * r, 0, (c1 - c0) * r, strip.bins, left + c0 * cell, stripTop, (c1 - c0) * cell, STRIP_H);
        g.fillStyle = '#1d1d1f';
        g.font = LABEL_FONT;
        g.textBaseline = 'middle';
        g.textAlign = 'right';
        g.fillText('log-mel', left - 4, stripTop + STRIP_H / 2, left - 6);
        g.fillStyle = g.strokeStyle = '#e41a1c';
        g.lineWidth = 2;
        stops.forEach((stop, row) => {
          if (stop < 0 || row >= R || stop < c0 || stop >= c1) return;
          const x = left + (stop + 0.5) * cell;
          g.beginPath();
          g.arc(x, top + (row + 0.5) * cell, Math.max(1.5, cell * 0.22), 0, 2 * Math.PI);
          g.fill();
          g.beginPath();
          g.moveTo(x, stripTop - STRIP_GAP);
          g.lineTo(x, stripTop + 5);
          g.stroke();
        });
      };
      const pic = scrolledPicture('matrix', `attention heatmap, ${R} by ${C}`, fullW, fullH, paint);
      const sizer = pic.sizer;
      drawn.rows = R; drawn.cols = C; drawn.cells = R * C; drawn.thumbnails = 0;
      drawn.strip = strip ? { frames: strip.frames, bins: strip.bins, width: C * cell, height: STRIP_H } : null;
      drawn.stops = stops.filter((x) => x >= 0 && x < C).length;
      drawn.cell = cell; drawn.labelPx = cell < 6 ? 0 : Math.min(12, cell - 1);  // label font size, 0: none
      const cellAt = (ev) => {
        const rect = sizer.getBoundingClientRect();
        const c = Math.floor((ev.clientX - rect.left - left) / cell), r = Math.floor((ev.clientY - rect.top - top) / cell);
        return r >= 0 && r < R && c >= 0 && c < C ? [r, c] : null;
      };
      // On the sizer, not the canvas: a cell scrolled into view is hoverable before the
      // scroll event has moved the canvas there.
      // On the strip: the input frame and mel bin under the pointer, and its log-mel value.
      const stripAt = (ev) => {
        const rect = sizer.getBoundingClientRect();
        const x = ev.clientX - rect.left - left, y = ev.clientY - rect.top - stripTop;
        if (x < 0 || x >= C * cell || y < 0 || y >= STRIP_H) return null;
        return [Math.floor(x / cell * strip.reduction), strip.bins - 1 - Math.floor(y / STRIP_H * strip.bins)];
      };
      sizer.addEventListener('mousemove', (ev) => {
        const at = cellAt(ev);
        const onStrip = !at && strip ? stripAt(ev) : null;
        if (onStrip) {
          const [f, b] = onStrip, value = strip.value(f, b);
          const where = f < strip.inputFrames ? `${(f * 0.01).toFixed(2)} s` : 'padding past the end';
          return showTip(ev, `input frame ${f} (${where}), listener frame ${Math.floor(f / strip.reduction)}\nmel bin ${b}\nlog-mel: ${value.toPrecision(6)}`,
            { frame: String(f), bin: String(b), value: String(value) });
        }
        if (!at) return hideTip();
        const [r, c] = at, value = w[r * C + c];
        let text = `query (row ${r}): ${m.rows[r]}\nkey (column ${c}): ${m.cols[c]}\nweight: ${fmt(value)}`;
        if (strip) {
          const read = (hyps[state.hyp].frames_read || [])[r];
          text += `\nlistener frame ${c}: input frames ${c * strip.reduction}–${(c + 1) * strip.reduction - 1}`;
          if (read !== undefined) text += `\nstep ${r} read ${read} of ${C} listener frames`;
          if (stops[r] !== undefined) text += stops[r] >= 0 ? `, stopped at frame ${stops[r]}` : ', stopped nowhere';
        }
        showTip(ev, text, { row: String(r), col: String(c), weight: fmt(value) });
      });
      sizer.addEventListener('mouseleave', hideTip);
      api.cellCenter = (r, c) => {
        const rect = sizer.getBoundingClientRect();
        return { x: rect.left + left + (c + 0.5) * cell, y: rect.top + top + (r + 0.5) * cell };
      };
      // The middle of input frame f, mel bin b on the strip (in the page's coordinates).
      api.stripPoint = (f, b) => {
        const rect = sizer.getBoundingClientRect();
        return { x: rect.left + left + (f + 0.5) * cell / strip.reduction, y: rect.top + stripTop + (strip.bins - b - 0.5) * STRIP_H / strip.bins };
      };
      const name = `attn-${m.name.replace(/\s+/g, '-')}-layer${state.layer}-${state.head < 0 ? 'mean' : 'head' + state.head}`;
      return {
        el: pic.box,
        mounted: pic.repaint,
        unmount: pic.unmount,
        name,
        toCanvas: pic.full,
        toSVG: () => {
          const parts = [];
          for (let r = 0; r < R; r++) for (let c = 0; c < C; c++)
            parts.push(`<rect x="${left + c * cell}" y="${top + r * cell}" width="${cell}" height="${cell}" fill="${css(viridis(w[r * C + c]))}"><title>${xml(m.rows[r])} → ${xml(m.cols[c])}: ${fmt(w[r * C + c])}</title></rect>`);
          m.rows.forEach((l, r) => parts.push(`<text x="${left - 4}" y="${top + (r + 0.5) * cell}" text-anchor="end" dominant-baseline="middle">${xml(l)}</text>`));
          m.cols.forEach((l, c) => parts.push(`<text transform="translate(${left + (c + 0.5) * cell},${top - 4}) rotate(-90)" dominant-baseline="middle">${xml(l)}</text>`));
          if (strip) {
            parts.push(`<image x="${left}" y="${stripTop}" width="${C * cell}" height="${STRIP_H}" style="image-rendering:pixelated" preserveAspectRatio="none" href="${strip.image.toDataURL('image/png')}"><title>log-mel</title></image>`);
            stops.forEach((stop, row) => {
              if (stop >= 0) parts.push(`<circle cx="${left + (stop + 0.5) * cell}" cy="${top + (row + 0.5) * cell}" r="${Math.max(1.5, cell * 0.22)}" fill="#e41a1c"/>`);
            });
          }
          return svgDoc(left + C * cell, fullH, parts);
        },
        toJSON: () => ({ attention: m.name, hypothesis: hyps[state.hyp].name, layer: state.layer,
          head: state.head < 0 ? 'mean' : state.head, rows: m.rows, cols: m.cols,
          weights: Array.from({ length: R }, (_, r) => Array.from(w.subarray(r * C, (r + 1) * C))),
          ...(strip ? { stops, frames_read: hyps[state.hyp].frames_read } : {}) }),
      };
    }
    // ---- ASR: the log-mel strip of an alignment over listener frames (DATA.speech), or null
    // for any other map. Its image is the features at one pixel a value (input frames across,
    // bins up), grey from the minimum (black) to the maximum (white), made once.
    const STRIP_H = 80, STRIP_GAP = 6;
    let stripCache = null;
    function speechStrip(m) {
      const sp = DATA.speech;
      if (!sp || m.cols.length * sp.reduction !== sp.frames) return null;
      if (stripCache) return stripCache;
      const image = document.createElement('canvas');
      image.width = sp.frames; image.height = sp.bins;
      const g = image.getContext('2d');
      const img = g.createImageData(sp.frames, sp.bins);
      for (let f = 0; f < sp.frames; f++) for (let b = 0; b < sp.bins; b++) {
        const v = Math.round(255 * sp.unit[f * sp.bins + b]), i = 4 * ((sp.bins - 1 - b) * sp.frames + f);
        img.data[i] = img.data[i + 1] = img.data[i + 2] = v; img.data[i + 3] = 255;
      }
      g.putImageData(img, 0, 0);
      stripCache = { image, frames: sp.frames, bins: sp.bins, reduction: sp.reduction, inputFrames: sp.input_frames,
        value: (f, b) => sp.min + sp.unit[f * sp.bins + b] * (sp.max - sp.min) };
      return stripCache;
    }
    // Labels of rows [r0, r1) left of the cells and of columns [c0, c1) above them (rotated).
    const labelFont = (cell) => `${Math.min(12, cell - 1)}px system-ui, sans-serif`;
    function drawRowLabels(g, rows, left, top, cell, r0, r1) {
      if (cell < 6) return;  // too small to read: zoom in
      g.fillStyle = '#1d1d1f';
      g.font = labelFont(cell);
      g.textBaseline = 'middle';
      g.textAlign = 'right';
      for (let r = r0; r < r1; r++) g.fillText(rows[r], left - 4, top + (r + 0.5) * cell, left - 6);
    }
    function drawColLabels(g, cols, left, top, cell, c0, c1) {
      if (cell < 6) return;
      g.fillStyle = '#1d1d1f';
      g.font = labelFont(cell);
      g.textBaseline = 'middle';
      g.textAlign = 'left';
      for (let c = c0; c < c1; c++) {
        g.save();
        g.translate(left + (c + 0.5) * cell, top - 4);
        g.rotate(-Math.PI / 2);
        g.fillText(cols[c], 0, 0, top - 6);
        g.restore();
      }
    }

    // ---- head view: keys on the left, queries on the right, a line per weight and head.
    function headView(m) {
      const shown = [...Array(m.heads).keys()].filter((h) => state.shown === null || state.shown.has(h));
      const R = m.rows.length, C = m.cols.length;
      const rowH = Math.max(8, Math.round(16 * Math.pow(1.2, state.zoom)));
      const lw = labelWidthOf(m.cols), rw = labelWidthOf(m.rows), gap = 220;
      const width = lw + gap + rw, height = Math.max(R, C) * rowH + 8;
      const mats = shown.map((h) => matrix(m, state.layer, h));
      // The lines each head draws: weights >= 0.01 of the pinned token (or of all), at most
      // MAX_LINES per head, strongest first, so a 200-token input stays quick to draw.
      const MAX_LINES = 400;
      const pin = state.pinned;
      let capped = false;
      const chosen = mats.map((w) => {
        const list = [];
        for (let r = 0; r < R; r++) {
          if (pin && pin.side === 'query' && pin.index !== r) continue;
          for (let c = 0; c < C; c++) {
            if (pin && pin.side === 'key' && pin.index !== c) continue;
            if (w[r * C + c] >= 0.01) list.push(r * C + c);
          }
        }
        if (list.length <= MAX_LINES) return list;
        capped = true;
        // Keep the strongest: the smallest threshold (of 1024 steps) that leaves <= MAX_LINES.
        const bins = new Uint32Array(1025);
        for (const i of list) bins[Math.min(1024, Math.floor(w[i] * 1024))]++;
        let keep = 0, t = 1024;
        while (t > 0 && keep + bins[t] <= MAX_LINES) keep += bins[t--];
        return list.filter((i) => Math.floor(w[i] * 1024) > t);
      });
      const lines = chosen.reduce((n, l) => n + l.length, 0);
      // Draws the part [x0, x0 + vw) × [y0, y0 + vh) (the canvas clips the lines to it).
      const paint = (g, x0, y0, vw, vh) => {
        g.save();
        g.translate(-x0, -y0);
        g.fillStyle = '#fff';
        g.fillRect(x0, y0, vw, vh);
        shown.forEach((h, k) => {
          const w = mats[k];
          g.strokeStyle = headColour(h);
          g.lineWidth = 1;
          // Ten opacity levels, one path each: thousands of lines stay one draw call per level.
          for (let level = 1; level <= 10; level++) {
            g.globalAlpha = level / 10;
            g.beginPath();
            for (const i of chosen[k]) {
              if (Math.ceil(w[i] * 10) !== level) continue;
              const r = Math.floor(i / C), c = i % C;
              g.moveTo(lw, (c + 0.5) * rowH + 4);
              g.lineTo(lw + gap, (r + 0.5) * rowH + 4);
            }
            g.stroke();
          }
        });
        g.globalAlpha = 1;
        g.font = LABEL_FONT;
        g.textBaseline = 'middle';
        g.fillStyle = '#1d1d1f';
        const i0 = Math.max(0, Math.floor((y0 - 4) / rowH)), i1 = Math.ceil((y0 + vh - 4) / rowH);
        g.textAlign = 'right';
        for (let c = i0; c < Math.min(C, i1); c++) {
          g.font = pin && pin.side === 'key' && pin.index === c ? `bold ${LABEL_FONT}` : LABEL_FONT;
          g.fillText(m.cols[c], lw - 4, (c + 0.5) * rowH + 4, lw - 6);
        }
        g.textAlign = 'left';
        for (let r = i0; r < Math.min(R, i1); r++) {
          g.font = pin && pin.side === 'query' && pin.index === r ? `bold ${LABEL_FONT}` : LABEL_FONT;
          g.fillText(m.rows[r], lw + gap + 4, (r + 0.5) * rowH + 4, rw - 6);
        }
        g.restore();
      };
      const pic = scrolledPicture('heads', `head view, layer ${state.layer}`, width, height, paint);
      const sizer = pic.sizer;
      drawn.rows = R; drawn.cols = C; drawn.heads = shown.length; drawn.lines = lines; drawn.thumbnails = 0;
      drawn.capped = capped ? MAX_LINES : 0;
      const tokenAt = (ev) => {
        const rect = sizer.getBoundingClientRect();
        const x = ev.clientX - rect.left, i = Math.floor((ev.clientY - rect.top - 4) / rowH);
        if (x < lw && i >= 0 && i < C) return { side: 'key', index: i };
        if (x > lw + gap && i >= 0 && i < R) return { side: 'query', index: i };
        return null;
      };
      sizer.addEventListener('click', (ev) => {
        const t = tokenAt(ev);
        state.pinned = t && !(state.pinned && state.pinned.side === t.side && state.pinned.index === t.index) ? t : null;
        render();
      });
      sizer.addEventListener('mousemove', (ev) => {
        const t = tokenAt(ev);
        if (!t) return hideTip();
        const label = t.side === 'key' ? m.cols[t.index] : m.rows[t.index];
        showTip(ev, `${t.side} ${t.index}: ${label}`, { side: t.side, index: String(t.index) });
      });
      sizer.addEventListener('mouseleave', hideTip);
      // The matrices the head view draws, per shown head (the tests compare them with --json).
      api.headMatrices = () => shown.map((h, k) => ({ head: h, weights: Array.from(mats[k]) }));
      api.tokenCenter = (side, i) => {
        const rect = sizer.getBoundingClientRect();
        return { x: rect.left + (side === 'key' ? lw / 2 : lw + gap + rw / 2), y: rect.top + (i + 0.5) * rowH + 4 };
      };
      return {
        el: pic.box,
        mounted: pic.repaint,
        unmount: pic.unmount,
        name: `attn-${m.name.replace(/\s+/g, '-')}-layer${state.layer}-heads`,
        toCanvas: pic.full,
        toSVG: () => {
          const parts = [];
          shown.forEach((h, k) => {
            for (const i of chosen[k]) {
              const v = mats[k][i], r = Math.floor(i / C), c = i % C;
              parts.push(`<line x1="${lw}" y1="${(c + 0.5) * rowH + 4}" x2="${lw + gap}" y2="${(r + 0.5) * rowH + 4}" stroke="${headColour(h)}" stroke-opacity="${v.toFixed(3)}"/>`);
            }
          });
          m.cols.forEach((l, c) => parts.push(`<text x="${lw - 4}" y="${(c + 0.5) * rowH + 4}" text-anchor="end" dominant-baseline="middle">${xml(l)}</text>`));
          m.rows.forEach((l, r) => parts.push(`<text x="${lw + gap + 4}" y="${(r + 0.5) * rowH + 4}" dominant-baseline="middle">${xml(l)}</text>`));
          return svgDoc(width, height, parts);
        },
        toJSON: () => ({ attention: m.name, hypothesis: hyps[state.hyp].name, layer: state.layer, rows: m.rows, cols: m.cols,
          heads: shown.map((h, k) => ({ head: h, weights: Array.from({ length: R }, (_, r) => Array.from(mats[k].subarray(r * C, (r + 1) * C))) })) }),
      };
    }

    // ---- model view: a layers × heads grid of downsampled thumbnails.
    // Each thumbnail pixel shows the largest weight of the cells it covers (a peak stays
    // visible). fillThumbnail draws one into its (already sized) canvas.
    function fillThumbnail(canvas, w, R, C) {
      const tw = canvas.width, th = canvas.height;
      const g = canvas.getContext('2d');
      const img = g.createImageData(tw, th);
      for (let y = 0; y < th; y++) {
        const r0 = Math.floor(y * R / th), r1 = Math.max(r0 + 1, Math.floor((y + 1) * R / th));
        for (let x = 0; x < tw; x++) {
          const c0 = Math.floor(x * C / tw), c1 = Math.max(c0 + 1, Math.floor((x + 1) * C / tw));
          let v = 0;
          for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) v = Math.max(v, w[r * C + c]);
          const col = VIRIDIS[Math.max(0, Math.min(255, Math.round(v * 255)))], i = 4 * (y * tw + x);
          img.data[i] = col[0]; img.data[i + 1] = col[1]; img.data[i + 2] = col[2]; img.data[i + 3] = 255;
        }
      }
      g.putImageData(img, 0, 0);
    }
    // Thumbnails are drawn a few at a time (at most THUMB_BUDGET_MS of script per task), so
    // that opening the model view of a 6 × 8 model paints its grid at once and fills it in
    // over the next frames; each drawn thumbnail is kept (per hypothesis, map, layer, head).
    const THUMB_BUDGET_MS = 8;
    const thumbCache = new Map();
    let thumbQueue = [], thumbTimer = null, thumbWaiters = [];
    function drainThumbs(budget) {
      const t0 = performance.now();
      while (thumbQueue.length && performance.now() - t0 < budget) {
        const job = thumbQueue.shift();
        fillThumbnail(job.canvas, job.weights(), job.R, job.C);
        job.canvas.dataset.drawn = 'true';
      }
      drawn.pendingThumbnails = thumbQueue.length;
      if (thumbQueue.length) { thumbTimer = setTimeout(() => drainThumbs(THUMB_BUDGET_MS), 0); return; }
      thumbTimer = null;
      for (const done of thumbWaiters.splice(0)) done();
    }
    const finishThumbs = () => { if (thumbTimer) clearTimeout(thumbTimer); drainThumbs(Infinity); };
    // Resolves once every thumbnail of the model view is drawn (the tests and screenshots wait on it).
    api.settled = () => new Promise((done) => (thumbQueue.length ? thumbWaiters.push(done) : done()));
    function modelView(m) {
      const R = m.rows.length, C = m.cols.length, px = Math.round(72 * Math.pow(1.25, state.zoom));
      const grid = $('div', { className: 'grid', id: 'model-grid', style: `grid-template-columns: auto repeat(${m.heads}, ${px}px)` });
      grid.append($('div', { className: 'cell' }));
      for (let h = 0; h < m.heads; h++) grid.append($('div', { className: 'cell', text: `head ${h}` }));
      const thumbs = [];
      if (thumbTimer) clearTimeout(thumbTimer);
      thumbQueue = [];
      const hyp = state.hyp, mapIndex = state.map;
      for (let l = 0; l < m.layers; l++) {
        grid.append($('div', { className: 'cell', text: `layer ${l}` }));
        for (let h = 0; h < m.heads; h++) {
          const key = `${hyp}/${mapIndex}/${l}/${h}`;
          let t = thumbCache.get(key);
          if (!t) {
            t = document.createElement('canvas');
            t.width = Math.min(C, 64); t.height = Math.min(R, 64);
            thumbCache.set(key, t);
          }
          if (t.dataset.drawn !== 'true') thumbQueue.push({ canvas: t, weights: () => matrix(m, l, h), R, C });
          t.className = 'thumb' + (l === state.layer && h === state.head ? ' selected' : '');
          t.style.width = `${px}px`;
          t.style.height = `${Math.round(px * Math.min(R, 64) / Math.min(C, 64))}px`;
          t.tabIndex = 0;
          t.dataset.layer = String(l);
          t.dataset.head = String(h);
          t.setAttribute('aria-label', `layer ${l} head ${h}`);
          grid.append(t);
          thumbs.push({ l, h, t });
        }
      }
      // One listener on the grid (the cached canvases are reused by later grids).
      const open = (ev) => {
        const t = ev.target.closest('canvas.thumb');
        if (!t) return;
        state.layer = Number(t.dataset.layer); state.head = Number(t.dataset.head); state.mode = 'matrix';
        render();
      };
      grid.addEventListener('click', open);
      grid.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') open(ev); });
      drawn.pendingThumbnails = thumbQueue.length;
      if (thumbQueue.length) thumbTimer = setTimeout(() => drainThumbs(THUMB_BUDGET_MS), 0);
      drawn.rows = R; drawn.cols = C; drawn.thumbnails = thumbs.length; drawn.layers = m.layers; drawn.heads = m.heads;
      const cellW = px + 6, labelW = 60, headH = 20;
      const composite = () => {
        finishThumbs();
        const c = document.createElement('canvas');
        const g = sizedCanvas(c, labelW + m.heads * cellW, headH + m.layers * (cellW));
        g.fillStyle = '#fff';
        g.fillRect(0, 0, labelW + m.heads * cellW, headH + m.layers * cellW);
        g.fillStyle = '#1d1d1f';
        g.font = LABEL_FONT;
        g.imageSmoothingEnabled = false;
        for (let h = 0; h < m.heads; h++) g.fillText(`head ${h}`, labelW + h * cellW, 14);
        for (const { l, h, t } of thumbs) {
          if (h === 0) g.fillText(`layer ${l}`, 4, headH + l * cellW + px / 2);
          g.drawImage(t, labelW + h * cellW, headH + l * cellW, px, px);
        }
        return c;
      };
      return {
        el: grid,
        name: `attn-${m.name.replace(/\s+/g, '-')}-model-view`,
        toCanvas: composite,
        toSVG: () => {
          finishThumbs();
          const parts = [];
          for (let h = 0; h < m.heads; h++) parts.push(`<text x="${labelW + h * cellW}" y="14">head ${h}</text>`);
          for (const { l, h, t } of thumbs) {
            if (h === 0) parts.push(`<text x="4" y="${headH + l * cellW + px / 2}">layer ${l}</text>`);
            parts.push(`<image x="${labelW + h * cellW}" y="${headH + l * cellW}" width="${px}" height="${px}" style="image-rendering:pixelated" preserveAspectRatio="none" href="${t.toDataURL('image/png')}"/>`);
          }
          return svgDoc(labelW + m.heads * cellW, headH + m.layers * cellW, parts);
        },
        toJSON: () => ({ attention: m.name, hypothesis: hyps[state.hyp].name, rows: m.rows, cols: m.cols,
          layers: Array.from({ length: m.layers }, (_, l) => Array.from({ length: m.heads }, (_, h) => {
            const w = matrix(m, l, h);
            return Array.from({ length: R }, (_, r) => Array.from(w.subarray(r * C, (r + 1) * C)));
          })) }),
      };
    }

    // ---- keyboard: ←/→ head, ↑/↓ layer, [ / ] attention map, 1/2/3 view, +/- zoom.
    document.addEventListener('keydown', (ev) => {
      if (ev.target instanceof HTMLSelectElement || ev.target instanceof HTMLInputElement || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      const m = currentMap();
      let handled = true;
      if (ev.key === 'ArrowRight') state.head = Math.min(m.heads - 1, state.head + 1);
      else if (ev.key === 'ArrowLeft') state.head = Math.max(-1, state.head - 1);
      else if (ev.key === 'ArrowDown') state.layer = Math.min(m.layers - 1, state.layer + 1);
      else if (ev.key === 'ArrowUp') state.layer = Math.max(0, state.layer - 1);
      else if (ev.key === ']' || ev.key === '[') {
        const n = hyps[state.hyp].maps.length;
        state.map = (state.map + (ev.key === ']' ? 1 : n - 1)) % n;
        clamp();
        rebuildSelects();
      } else if (ev.key === '1' || ev.key === '2' || ev.key === '3') state.mode = modes[Number(ev.key) - 1][0];
      else if (ev.key === '+' || ev.key === '=') zoom.value = String(state.zoom = Math.min(4, state.zoom + 1));
      else if (ev.key === '-') zoom.value = String(state.zoom = Math.max(-3, state.zoom - 1));
      else handled = false;
      if (handled) { ev.preventDefault(); render(); }
    });
    api.set = (changes) => {
      Object.assign(state, changes);
      if ('hyp' in changes || 'map' in changes) rebuildSelects();
      render();
    };
    render();
  }

  // ASR: the hypothesis shown, the reference transcript and the frames each step read.
  function speechInfo(h, frames) {
    const lines = [`hypothesis (${h.name}): ${h.text}`, `reference (${DATA.speech.utterance}): ${DATA.speech.reference}`];
    if (h.frames_read) {
      const mean = h.frames_read.reduce((a, b) => a + b, 0) / Math.max(1, h.frames_read.length);
      lines.push(`listener frames read before each step (of ${frames}): ${h.frames_read.join(' ')} (mean ${mean.toFixed(1)})`);
    }
    return $('p', { id: 'speech', className: 'speech', text: lines.join('\n') });
  }

  function legendEl() {
    const c = document.createElement('canvas');
    const g = sizedCanvas(c, 160, 10);
    for (let x = 0; x < 160; x++) { g.fillStyle = css(viridis(x / 159)); g.fillRect(x, 0, 1, 10); }
    return $('span', { className: 'legend' }, [document.createTextNode('0'), c, document.createTextNode('1 (viridis)')]);
  }
  function svgDoc(w, h, parts) {
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.ceil(w)}" height="${Math.ceil(h)}" font-family="sans-serif" font-size="12">` +
      `<rect width="100%" height="100%" fill="#fff"/>${parts.join('')}</svg>`;
  }

  // ---- classifier: the sentence, each token shaded by the chosen measure, and Kendall τ.
  function classifierPanel(root, controls) {
    const c = DATA.classifier;
    const names = Object.keys(c.measures);
    let measure = names[0];
    const panel = $('section', { id: 'classifier' });
    const sentence = $('div', { className: 'sentence', id: 'sentence' });
    const toggles = $('span', { className: 'group', role: 'group', 'aria-label': 'shading' });
    const side = $('div', { className: 'side' });
    const taus = $('table', { id: 'taus' });
    const buttons = names.map((n) => $('button', { text: n, dataset: { measure: n }, on: { click: () => { measure = n; draw(); } } }));
    toggles.append(document.createTextNode('shade by '), ...buttons);
    taus.append($('tr', {}, [$('th', { text: 'Kendall τ-b' }), $('th', { text: 'τ' }), $('th', { text: 'p' })]));
    for (const t of c.taus) {
      taus.append($('tr', {}, [$('td', { text: `${t.first} vs ${t.second}` }),
        $('td', { text: t.defined ? t.tau.toFixed(3) : 'undefined' }), $('td', { text: t.defined ? t.p.toPrecision(3) : t.reason })]));
    }
    const shading = (n) => {
      const v = c.measures[n].map(Math.abs);
      const top = Math.max(...v, 1e-12);
      return v.map((x) => x / top);
    };
    function draw() {
      const values = c.measures[measure];
      const shade = shading(measure);
      sentence.replaceChildren(...c.tokens.map((tok, i) => {
        const col = viridis(shade[i]);
        const light = 0.299 * col[0] + 0.587 * col[1] + 0.114 * col[2] > 140;
        const span = $('span', { text: tok, style: `background:${css(col)};color:${light ? '#000' : '#fff'}`, dataset: { index: String(i), value: String(values[i]) } });
        span.addEventListener('mousemove', (ev) => showTip(ev, `${tok}\n${measure}: ${values[i].toPrecision(6)}`, { token: tok, value: String(values[i]) }));
        span.addEventListener('mouseleave', hideTip);
        return span;
      }));
      for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.measure === measure));
      window.attnView.drawn.tokens = c.tokens.length;
      window.attnView.classifierMeasure = measure;
    }
    const view = {
      name: 'attn-classifier-tokens',
      toCanvas: () => {
        const g0 = document.createElement('canvas').getContext('2d');
        g0.font = '16px system-ui, sans-serif';
        const widths = c.tokens.map((t) => g0.measureText(t).width + 10);
        const maxW = 1000;
        let x = 8, y = 8;
        const pos = widths.map((w) => { if (x + w > maxW) { x = 8; y += 28; } const p = [x, y]; x += w + 4; return p; });
        const canvas = document.createElement('canvas');
        const g = sizedCanvas(canvas, maxW + 16, y + 40);
        g.fillStyle = '#fff';
        g.fillRect(0, 0, maxW + 16, y + 40);
        g.font = '16px system-ui, sans-serif';
        g.textBaseline = 'middle';
        const shade = shading(measure);
        c.tokens.forEach((t, i) => {
          const col = viridis(shade[i]);
          g.fillStyle = css(col);
          g.fillRect(pos[i][0], pos[i][1], widths[i], 24);
          g.fillStyle = 0.299 * col[0] + 0.587 * col[1] + 0.114 * col[2] > 140 ? '#000' : '#fff';
          g.fillText(t, pos[i][0] + 5, pos[i][1] + 12);
        });
        return canvas;
      },
      toSVG: () => {
        const shade = shading(measure);
        let x = 8;
        const parts = c.tokens.map((t, i) => {
          const w = 10 + 8 * [...t].length;
          const col = viridis(shade[i]);
          const s = `<rect x="${x}" y="8" width="${w}" height="24" fill="${css(col)}"/><text x="${x + 5}" y="24" fill="${0.299 * col[0] + 0.587 * col[1] + 0.114 * col[2] > 140 ? '#000' : '#fff'}">${xml(t)}</text>`;
          x += w + 4;
          return s;
        });
        return svgDoc(x + 8, 40, parts);
      },
      toJSON: () => ({ tokens: c.tokens, label: c.label, probability: c.probability, measures: c.measures, taus: c.taus }),
    };
    side.append($('div', {}, [toggles, sentence, $('p', { className: 'note', text: `prediction: ${c.label} (p = ${c.probability.toFixed(4)}); attention: ${c.description}; shading: |value| / max |value|` }), exportButtons(view)]), taus);
    panel.append($('h2', { text: 'tokens' }), side);
    root.append(panel);
    draw();
  }

  // =========================================================================================
  // Run pages: a chart per numeric field of log.jsonl (against step), and a sweep's
  // accuracy by length per decoder.
  // =========================================================================================
  function chart(title, xLabel, series) {
    // series: [{name, points: [[x, y], ...]}]
    const W = 460, H = 260, L = 56, Rm = 12, T = 24, B = 36;
    const canvas = $('canvas', { className: 'chart', tabIndex: 0, 'aria-label': title, dataset: { title } });
    const all = series.flatMap((s) => s.points);
    const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
    let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (y0 === y1) { y0 -= Math.abs(y0) * 0.1 + 1e-9; y1 += Math.abs(y1) * 0.1 + 1e-9; }
    const X = (x) => L + (x - x0) / (x1 - x0) * (W - L - Rm), Y = (y) => H - B - (y - y0) / (y1 - y0) * (H - T - B);
    const draw = (g, hover) => {
      g.fillStyle = '#fff'; g.fillRect(0, 0, W, H);
      g.strokeStyle = '#888'; g.lineWidth = 1;
      g.strokeRect(L, T, W - L - Rm, H - T - B);
      g.fillStyle = '#1d1d1f'; g.font = LABEL_FONT;
      g.fillText(title, L, 16);
      g.textAlign = 'center'; g.fillText(xLabel, (L + W - Rm) / 2, H - 6);
      for (let i = 0; i <= 4; i++) {
        const xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
        g.textAlign = 'center'; g.fillText(Number(xv.toPrecision(4)).toString(), X(xv), H - B + 14);
        g.textAlign = 'right'; g.fillText(Number(yv.toPrecision(4)).toString(), L - 4, Y(yv) + 4);
      }
      series.forEach((s, k) => {
        g.strokeStyle = HEAD_COLOURS[k % HEAD_COLOURS.length]; g.lineWidth = 1.5;
        g.beginPath();
        s.points.forEach(([x, y], i) => (i ? g.lineTo(X(x), Y(y)) : g.moveTo(X(x), Y(y))));
        g.stroke();
        if (s.points.length < 40) for (const [x, y] of s.points) { g.fillStyle = g.strokeStyle; g.fillRect(X(x) - 2, Y(y) - 2, 4, 4); }
      });
      if (series.length > 1) series.forEach((s, k) => {
        g.fillStyle = HEAD_COLOURS[k % HEAD_COLOURS.length]; g.textAlign = 'right';
        g.fillText(s.name, W - Rm - 4, T + 14 + 14 * k);
      });
      if (hover) { g.strokeStyle = '#444'; g.beginPath(); g.moveTo(X(hover), T); g.lineTo(X(hover), H - B); g.stroke(); }
    };
    const g = sizedCanvas(canvas, W, H);
    draw(g, null);
    canvas.addEventListener('mousemove', (ev) => {
      const rect = canvas.getBoundingClientRect();
      const xv = x0 + (ev.clientX - rect.left - L) / (W - L - Rm) * (x1 - x0);
      let best = null;
      for (const p of all) if (best === null || Math.abs(p[0] - xv) < Math.abs(best - xv)) best = p[0];
      const lines = [`${xLabel} ${best}`];
      for (const s of series) {
        const p = s.points.find((q) => q[0] === best);
        if (p) lines.push(`${series.length > 1 ? s.name + ' ' : ''}${title}: ${Number(p[1].toPrecision(6))}`);
      }
      draw(g, best);
      showTip(ev, lines.join('\n'), { x: String(best) });
    });
    canvas.addEventListener('mouseleave', () => { draw(g, null); hideTip(); });
    const view = {
      name: `attn-${title.replace(/[^A-Za-z0-9]+/g, '-')}`,
      toCanvas: () => canvas,
      toSVG: () => svgDoc(W, H, [`<rect x="${L}" y="${T}" width="${W - L - Rm}" height="${H - T - B}" fill="none" stroke="#888"/>`,
        `<text x="${L}" y="16">${xml(title)}</text>`, `<text x="${(L + W) / 2}" y="${H - 6}" text-anchor="middle">${xml(xLabel)}</text>`,
        ...series.map((s, k) => `<polyline fill="none" stroke="${HEAD_COLOURS[k % HEAD_COLOURS.length]}" stroke-width="1.5" points="${s.points.map(([x, y]) => `${X(x).toFixed(2)},${Y(y).toFixed(2)}`).join(' ')}"><title>${xml(s.name)}</title></polyline>`)]),
      toJSON: () => ({ title, x: xLabel, series }),
    };
    return $('figure', {}, [canvas, exportButtons(view)]);
  }

  function runPage(root) {
    const charts = $('div', { className: 'charts', id: 'charts' });
    let count = 0;
    const fields = new Set();
    for (const run of DATA.runs) for (const r of run.records) for (const [k, v] of Object.entries(r))
      if (typeof v === 'number' && Number.isFinite(v) && k !== 'step') fields.add(k);
    for (const f of fields) {
      const series = DATA.runs.map((run) => ({ name: run.name,
        points: run.records.filter((r) => typeof r[f] === 'number' && typeof r.step === 'number').map((r) => [r.step, r[f]]) }))
        .filter((s) => s.points.length > 0);
      if (series.length === 0) continue;
      charts.append(chart(f, 'step', series));
      count++;
    }
    if (DATA.runs.length) root.append($('h2', { text: `training curves (${DATA.runs.map((r) => r.name).join(', ')})` }), charts);
    if (Array.isArray(DATA.sweep)) {
      const sweepCharts = $('div', { className: 'charts', id: 'sweep' });
      for (const metric of ['token_accuracy', 'sequence_accuracy']) {
        const names = [...new Set(DATA.sweep.map((r) => r.attention))];
        const series = names.map((n) => ({ name: n, points: DATA.sweep.filter((r) => r.attention === n && typeof r[metric] === 'number').map((r) => [r.length, r[metric]]) }));
        sweepCharts.append(chart(metric, 'length', series));
        count++;
      }
      root.append($('h2', { text: 'sweep: accuracy by length per decoder' }), sweepCharts);
    }
    window.attnView.drawn.charts = count;
  }

  // =========================================================================================
  async function unpackAll() {
    for (const h of DATA.hypotheses)
      for (const m of h.maps) m.values = await unpack(m.data, m.layers * m.heads * m.rows.length * m.cols.length);
    // ASR: the log-mel features, packed as (value − min) / (max − min).
    if (DATA.speech) DATA.speech.unit = await unpack(DATA.speech.data, DATA.speech.frames * DATA.speech.bins);
  }
  async function main() {
    window.attnView = { drawn: {} };
    document.getElementById('title').textContent = DATA.title || 'attn view';
    const controls = document.getElementById('controls');
    const root = document.getElementById('views');
    if (DATA.kind === 'run') {
      runPage(root);
      // A sweep folder: each model's alignment of one example (the output menu picks the model).
      if (Array.isArray(DATA.hypotheses) && DATA.hypotheses.length) {
        await unpackAll();
        // The controls move down to the alignments they drive.
        root.append($('h2', { text: `each model's alignment of ${DATA.input}${(DATA.notes || []).length ? ` (${DATA.notes.join('; ')})` : ''}` }), controls);
        attentionPage(root, controls);
      } else {
        controls.hidden = true;
      }
    } else {
      const sub = [];
      if (DATA.input) sub.push(`input: ${DATA.input}`);
      for (const n of DATA.notes || []) sub.push(n);
      document.getElementById('subtitle').textContent = sub.join('\n');
      await unpackAll();
      if (DATA.classifier) classifierPanel(root, controls);
      if (DATA.hypotheses.length) attentionPage(root, controls);
      else controls.hidden = true;
    }
    document.body.dataset.ready = 'true';
  }
  main().catch((e) => {
    document.getElementById('views').textContent = `attn view: cannot show this page: ${e.message}`;
    console.error(e);
  });
})();
