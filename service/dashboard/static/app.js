// METRO dashboard: vanilla JS, no framework, no chart library, nothing from a CDN.
//
// Every value comes from the public /v1 JSON API, called with the user's API key exactly as any
// client calls it. The key is asked once and kept in sessionStorage (this tab, this session);
// a link may hand it over once as a URL fragment, #key=..., which never reaches a server and is
// removed from the address bar at once.
(function () {
  'use strict';

  const ROOT = document.body.dataset.root || '';
  const KEY_STORAGE = 'metro.apiKey';
  const STATES = ['queued', 'running', 'cancelling', 'succeeded', 'failed', 'cancelled'];
  const ACTIVE_STATES = new Set(['queued', 'running', 'cancelling']);
  const POLL_MS = 2000;
  const PAGE_LIMIT = 200; // the server lowers it to its own maximum
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const REPEAT_COLORS = ['#2563eb', '#0d9488', '#9333ea', '#db2777', '#65a30d', '#ea580c',
    '#0891b2', '#4f46e5'];
  const CHOSEN_COLOR = '#d97706';
  const SHIFT_DASHES = ['', '6 4', '2 3']; // solid, dashed, dotted: one per cost shift
  // Each method's name as the server gives it (the result's method_names: one definition, in
  // core.job_spec, that metro result prints too), kept from the last result read.
  let methodNames = {};

  const view = document.getElementById('view');
  const login = document.getElementById('login');
  const loginForm = document.getElementById('login-form');
  const loginError = document.getElementById('login-error');
  const keyInput = document.getElementById('api-key');
  const signOut = document.getElementById('sign-out');
  const announcer = document.getElementById('announce');

  // ---------------------------------------------------------------- DOM helpers

  function setAttrs(el, attrs) {
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'text') el.textContent = value;
      else if (name.startsWith('on') && typeof value === 'function') {
        el.addEventListener(name.slice(2), value);
      } else el.setAttribute(name, value === true ? '' : String(value));
    }
  }

  function appendAll(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
  }

  // An element's new children, skipping null, undefined and false as h() does (the DOM's own
  // replaceChildren would write them as the text "null"); never replaceChildren directly.
  function fill(el, ...children) {
    el.textContent = '';
    appendAll(el, children);
    return el;
  }

  // Text always goes in as text nodes: nothing from the API is ever parsed as HTML.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    appendAll(el, children);
    return el;
  }

  function svg(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    setAttrs(el, attrs);
    appendAll(el, children);
    return el;
  }

  function announce(message) {
    if (announcer.textContent !== message) announcer.textContent = message;
  }

  // ---------------------------------------------------------------- formatting

  function fmtNum(x, digits = 4) {
    if (x === null || x === undefined || Number.isNaN(x)) return '—';
    if (!Number.isFinite(x)) return String(x);
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return x.toExponential(2);
    return x.toFixed(digits);
  }

  function fmtLambda(x) {
    if (x === null || x === undefined) return '—';
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return x.toExponential(3);
    return String(Number(x.toPrecision(4)));
  }

  function fmtCount(n) {
    return n === null || n === undefined ? '—' : Number(n).toLocaleString('en-US');
  }

  function parseTime(iso) {
    if (!iso) return null;
    return new Date(/([zZ]|[+-]\d\d:?\d\d)$/.test(iso) ? iso : iso + 'Z');
  }

  function timeEl(iso) {
    const d = parseTime(iso);
    if (!d) return '—';
    const text = d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    return h('time', { datetime: d.toISOString(), title: d.toISOString() }, text);
  }

  function fmtDuration(startIso, endIso) {
    const start = parseTime(startIso);
    if (!start) return '—';
    const end = parseTime(endIso) || new Date();
    let s = Math.max(0, Math.round((end - start) / 1000));
    const hours = Math.floor(s / 3600);
    const minutes = Math.floor((s % 3600) / 60);
    s %= 60;
    if (hours) return `${hours} h ${minutes} min`;
    if (minutes) return `${minutes} min ${s} s`;
    return `${s} s`;
  }

  function methodLabel(method) {
    return methodNames[method] || method;
  }

  // The metric as people write it: the display name the service records (F2 for f_beta(2));
  // jobs from before it was recorded get the F-measures' names here.
  function metricName(spec) {
    const info = (spec && spec.metric_info) || {};
    const metric = (spec && spec.metric) || {};
    if (info.display_name) return info.display_name;
    const name = info.name || metric.preset || metric.name || 'custom';
    const fBeta = /^f_beta\((.+)\)$/.exec(name);
    return fBeta ? `F${fBeta[1]}` : name === 'f1' ? 'F1' : name;
  }

  // Which split a selection score was measured on, in words.
  function selectionLabel(choice) {
    if (choice.selection_split === 'cross-validation') {
      return choice.n_folds ? `${choice.n_folds}-fold CV` : 'CV';
    }
    return choice.selection_split;
  }

  // What the searches chose by, over the repeats: "F2 0.9023 ± 0.0260 (5-fold CV, 3 repeats)".
  function selectionText(choices, name) {
    const values = (choices || []).map((c) => c.selection_score).filter((v) => v !== null && v !== undefined);
    if (!values.length) return null;
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    let text = `${name} ${fmtNum(mean)}`;
    if (values.length > 1) {
      const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1);
      text += ` ± ${fmtNum(Math.sqrt(variance))}`;
    }
    return `${text} (${selectionLabel(choices[0])}${values.length > 1 ? `, ${values.length} repeats` : ''})`;
  }

  // Which choice a line is about: its repeat where there are several, and an averaged job's
  // class (or label): a choice per class made "Repeat 0:" of every line, with no class named.
  function whose(c, choices, word) {
    const labelled = c.label !== null && c.label !== undefined;
    const several = new Set(choices.map((x) => x.repeat)).size > 1 || (!labelled && choices.length > 1);
    return (several ? `Repeat ${c.repeat}: ` : '') + (labelled ? `${capital(word)} ${c.label}: ` : '');
  }

  function warningsBlock(choices, word = 'class') {
    const items = [];
    for (const c of choices || []) {
      for (const w of c.warnings || []) {
        items.push(h('li', { 'data-code': w.code, 'data-repeat': c.repeat },
          whose(c, choices, word), w.message));
      }
    }
    if (!items.length) return null;
    return h('div', { class: 'notice notice-warning', id: 'search-warnings', role: 'note' },
      h('strong', {}, items.length > 1 ? 'Warnings' : 'Warning'), h('ul', {}, items));
  }

  // Where the safeguard's fallback replaced a repeat's choice: the server's words for why
  // (core.records.Fallback.message), as `metro result` prints them.
  function fallbackBlock(choices, word = 'class') {
    const items = (choices || []).filter((c) => c.fallback && c.fallback.message)
      .map((c) => h('li', { 'data-repeat': c.repeat, 'data-reason': c.fallback.reason },
        whose(c, choices, word), c.fallback.message));
    if (!items.length) return null;
    return h('div', { class: 'notice notice-warning', id: 'search-fallback', role: 'note' },
      h('strong', {}, 'Fallback delivered'), h('ul', {}, items));
  }

  // A constraint as people write it, with the confidence it must hold at when it has one:
  // "Recall ≥ 0.8 (90% confidence)".
  function constraintLabel(name, confidence) {
    if (confidence === null || confidence === undefined) return name;
    return `${name} (${Number((confidence * 100).toPrecision(6))}% confidence)`;
  }

  // The constraints of a result (the API's display_name and confidence), labelled.
  function resultConstraints(result) {
    return (result.constraints || []).map((c) => ({ ...c, display_name: constraintLabel(c.display_name, c.confidence) }));
  }

  // The job's constraints as its spec records them, with the names given at submission and the
  // confidence each must hold at: [{name, display_name (with the confidence), sense, bound,
  // confidence}], [] for an unconstrained job.
  function jobConstraints(spec) {
    const info = (spec && spec.constraint_info) || [];
    return ((spec && spec.constraints) || []).map((c, i) => {
      const sense = c.at_least !== undefined && c.at_least !== null ? 'at_least' : 'at_most';
      const named = info[i] || {};
      const confidence = c.confidence === undefined ? null : c.confidence;
      const name = named.display_name || named.name || `constraint ${i + 1}`;
      return { name, display_name: constraintLabel(name, confidence), sense, bound: c[sense], confidence };
    });
  }

  function holdsEl(holds, text) {
    return h('span', { class: `holds ${holds ? 'is-met' : 'is-missed'}`, 'data-holds': holds ? 'true' : 'false' },
      text || (holds ? 'met' : 'not met'));
  }

  // Under constraints, their values where the searches chose and whether they held there:
  // "met where chosen: Recall ≥ 0.9 0.9123 (5-fold CV)"; where not met, the tightest bound some
  // fit met, each on its own (constraint_reach): "Precision ≥ 0.7 0.6500 (tightest met: 0.5812)".
  // An averaged (multi-label) job chose per label: each value is named by its label (and its
  // repeat, with several), and the labels are not counted as repeats; the choices that missed
  // are named (a label, or a repeat when only some missed) and only theirs carry a reach.
  function chosenConstraintsEl(choices, constraints) {
    const chosen = (choices || []).filter((c) => c.constraint_values);
    if (!chosen.length || !constraints.length) return null;
    const met = chosen.every((c) => c.constraints_satisfied);
    const nRepeats = new Set(chosen.map((c) => c.repeat)).size;
    const labelled = chosen.some((c) => c.label !== null && c.label !== undefined);
    const who = (c) => (labelled ? `${nRepeats > 1 ? `repeat ${c.repeat} ` : ''}${c.label} ` : '');
    const missed = chosen.filter((c) => !c.constraints_satisfied);
    const partial = missed.length < chosen.length;
    const whose = (c) => (labelled ? who(c) : (partial ? `repeat ${c.repeat} ` : ''));
    const reach = (i) => (missed.length && missed.every((x) => x.constraint_reach && x.constraint_reach[i] != null)
      ? ` (tightest met: ${missed.map((x) => `${whose(x)}${fmtNum(x.constraint_reach[i])}`).join(', ')})` : '');
    const values = constraints.map((c, i) => `${c.display_name} ${chosen.map((x) => `${who(x)}${fmtNum(x.constraint_values[i])}`).join(', ')}${reach(i)}`);
    const where = `${selectionLabel(chosen[0])}${nRepeats > 1 ? `, ${nRepeats} repeats` : ''}`;
    const by = !met && (labelled || partial) ? ` (by ${missed.map((x) => whose(x).trim()).join(', ')})` : '';
    return h('span', { id: 'chosen-constraints' }, holdsEl(met), `${by} where chosen: ${values.join('; ')} (${where})`);
  }

  // The per-repeat choices: trained lambda and shift, ratio reached, the score chosen by (and,
  // under constraints, each one's value there).
  // The refinement step of one repeat: "T = 0.2, from 0.8512" when a refined model was kept
  // ("T = 0.2 (spread held), ..." for a stage of the held schedule)
  // (the score it was chosen by is then the refined one), "no" when none beat the choice.
  // A stage of the held-spread schedule (search.refine_scale) says so; the free one is the plain T.
  function stageLabel(temperature, scale) {
    return `T = ${temperature}${scale === 'held' ? ' (spread held)' : ''}`;
  }

  function refinementCell(c) {
    const step = c.refinement;
    if (!step) return h('td', { 'data-refined': 'none' }, '—');
    const tried = step.scores.map((s) => `${stageLabel(s.temperature, s.scale)}: ${fmtNum(s.score)}`).join(', ');
    const title = `Before the step ${fmtNum(step.score_before)} at threshold ${fmtNum(step.threshold_before)}; refined ${tried}`;
    return step.kept
      ? h('td', { 'data-refined': 'kept', title }, `${stageLabel(step.temperature, step.scale)}, from ${fmtNum(step.score_before)}`)
      : h('td', { 'data-refined': 'not-kept', title: `${title}; not kept: ${step.not_kept_reason || 'no reason given'}` }, 'no');
  }

  // What an averaged job searches one by one: its labels (several 0/1 label columns) or the
  // classes of its one label column; the CLI's target_word.
  function targetWord(job) {
    return ((job.spec.dataset || {}).label_columns || []).length ? 'label' : 'class';
  }
  const capital = (word) => word[0].toUpperCase() + word.slice(1);

  // An averaged job that trains one multinomial model (search.multiclass): no λ anywhere.
  function multinomialJob(job) {
    const spec = job.spec || {};
    return Boolean((spec.metric || {}).average) && (spec.search || {}).multiclass === 'multinomial';
  }

  function choicesTable(choices, name, constraints, word = 'class', searched = true) {
    const reached = choices.some((c) => c.ratio_reached !== null && c.ratio_reached !== undefined);
    // searched false: a multinomial model's classes (search.multiclass), which no search trained
    // at a λ, with a shift, or tuned a threshold for, so no columns of dashes claim one.
    const refined = choices.some((c) => c.refinement);
    // An averaged job: a choice per class, chosen by the class's own metric (F1, not its mean).
    const labelled = choices.some((c) => c.label !== null && c.label !== undefined);
    const shown = labelled ? name.split(' (')[0] : name;
    return h('div', { class: 'table-wrap' }, h('table', { class: 'table compact', id: 'choices-table' },
      h('caption', { class: 'sr-only' }, 'What each repeat\'s search chose'),
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', class: 'num' }, 'Repeat'),
        labelled ? h('th', { scope: 'col' }, capital(word)) : null,
        searched ? h('th', { scope: 'col', class: 'num' }, 'Trained ', h('span', { class: 'nt' }, 'λ')) : null,
        searched ? h('th', { scope: 'col' }, 'Shift') : null,
        reached ? h('th', { scope: 'col', class: 'num' }, 'Ratio reached') : null,
        searched ? h('th', { scope: 'col', class: 'num' }, 'Threshold') : h('th', { scope: 'col', class: 'num' }, 'Offset'),
        h('th', { scope: 'col', class: 'num' }, `${shown} chosen by`),
        refined ? h('th', { scope: 'col', title: 'The refinement step after the choice (docs/algorithms.md)' }, 'Refined') : null,
        // The constraint's name (the card says above it at what confidence it must hold).
        constraints.map((c) => h('th', { scope: 'col', class: 'num', title: c.display_name }, c.name)),
        constraints.length ? h('th', { scope: 'col' }, 'Constraints') : null)),
      h('tbody', {}, choices.map((c) => h('tr', { 'data-repeat': c.repeat, 'data-class': labelled ? String(c.label) : null },
        h('td', { class: 'num' }, c.repeat),
        labelled ? h('td', {}, String(c.label)) : null,
        searched ? h('td', { class: 'num' }, fmtLambda(c.trained_lambda)) : null,
        searched ? h('td', {}, c.shift) : null,
        reached ? h('td', { class: 'num' }, fmtLambda(c.ratio_reached)) : null,
        h('td', { class: 'num' }, fmtNum(searched ? c.tuned_threshold : c.offset)),
        h('td', { class: 'num' }, `${fmtNum(c.selection_score)} (${selectionLabel(c)})`),
        refined ? refinementCell(c) : null,
        constraints.map((_, i) => h('td', { class: 'num', 'data-constraint': i },
          fmtNum((c.constraint_values || [])[i]))),
        constraints.length ? h('td', {}, holdsEl(Boolean(c.constraints_satisfied))) : null)))));
  }

  // A dataset:// upload by its file name (the URI in the tooltip); other URIs as they are.
  const datasetNames = new Map();
  async function datasetLabel(uri) {
    const upload = /^dataset:\/\/([0-9a-fA-F-]{36})$/.exec(uri || '');
    if (!upload) return uri;
    if (!datasetNames.has(uri)) {
      try {
        datasetNames.set(uri, (await api(`/v1/datasets/${upload[1]}`)).filename);
      } catch (err) {
        if (err instanceof AuthRequired) throw err;
        datasetNames.set(uri, null); // deleted, or another tenant's: the URI is all there is
      }
    }
    return datasetNames.get(uri) || uri;
  }

  function datasetEl(uri, label) {
    return label && label !== uri
      ? h('span', { class: 'dataset', title: uri, 'data-uri': uri }, h('strong', {}, label), ' ', h('code', { class: 'muted small' }, uri))
      : h('code', { class: 'dataset', 'data-uri': uri }, uri);
  }

  function stateBadge(state) {
    return h('span', { class: `badge state-${state}` }, state);
  }

  function progressBar(fraction, state, label) {
    const pct = Math.round(Math.max(0, Math.min(1, fraction || 0)) * 1000) / 10;
    const fill = h('div', { class: 'progress-fill' });
    fill.style.width = pct + '%';
    const bar = h('div', {
      class: `progress state-${state}`, role: 'progressbar', 'aria-label': label,
      'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct,
    }, fill);
    return h('div', { class: 'progress-wrap' }, bar,
      h('span', { class: 'progress-text' }, `${Number.isInteger(pct) ? pct : pct.toFixed(1)} %`));
  }

  // ---------------------------------------------------------------- the API key and the API

  class AuthRequired extends Error {}

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  function captureKeyFromFragment() {
    if (!location.hash) return;
    const params = new URLSearchParams(location.hash.slice(1));
    if (!params.has('key')) return;
    const key = params.get('key').trim();
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    params.delete('key');
    const rest = params.toString();
    history.replaceState(history.state, '',
      location.pathname + location.search + (rest ? '#' + rest : ''));
  }

  function apiKey() {
    return sessionStorage.getItem(KEY_STORAGE);
  }

  async function apiFetch(path, method = 'GET') {
    const key = apiKey();
    if (!key) throw new AuthRequired('');
    const response = await fetch(ROOT + path, {
      method,
      headers: { Authorization: 'Bearer ' + key, Accept: 'application/json' },
      cache: 'no-store',
      credentials: 'omit',
    });
    if (response.status === 401) {
      sessionStorage.removeItem(KEY_STORAGE);
      throw new AuthRequired('That API key was not accepted. Check it and try again.');
    }
    if (!response.ok) {
      let message = `${response.status} ${response.statusText}`;
      try {
        const problem = await response.json(); // RFC 9457 problem+json
        message = problem.detail || problem.title || message;
      } catch (_) { /* not JSON */ }
      throw new ApiError(response.status, message);
    }
    return response;
  }

  async function api(path, method = 'GET') {
    return (await apiFetch(path, method)).json();
  }

  function withQuery(path, params) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== '') query.set(k, v);
    const qs = query.toString();
    return qs ? `${path}${path.includes('?') ? '&' : '?'}${qs}` : path;
  }

  // Every page of a cursor-paginated list.
  async function apiAll(path, stop) {
    const items = [];
    let cursor = null;
    for (let i = 0; i < 10000; i += 1) {
      const page = await api(withQuery(path, { limit: PAGE_LIMIT, cursor }));
      items.push(...page.items);
      cursor = page.next_cursor;
      if (!cursor || (stop && stop(page.items))) break;
    }
    return items;
  }

  // ---------------------------------------------------------------- polling

  let pollTimer = null;
  let pendingPoll = null;

  function stopPolling() {
    if (pollTimer !== null) clearTimeout(pollTimer);
    pollTimer = null;
    pendingPoll = null;
  }

  // One refresh at a time; a hidden tab waits until it is shown again.
  function schedulePoll(fn) {
    stopPolling();
    pollTimer = setTimeout(() => {
      pollTimer = null;
      if (document.hidden) pendingPoll = fn;
      else guard(fn);
    }, POLL_MS);
  }

  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && pendingPoll) {
      const fn = pendingPoll;
      pendingPoll = null;
      guard(fn);
    }
  });

  async function guard(fn) {
    try {
      await fn();
    } catch (err) {
      if (err instanceof AuthRequired) showLogin(err.message);
      else showError(err);
    }
  }

  function showError(err) {
    stopPolling();
    const status = err instanceof ApiError ? err.status : null;
    const title = status === 404 ? 'Not found' : 'Something went wrong';
    const detail = status === 404
      ? `${err.message}. It may not exist, or it belongs to another tenant than this API key's.`
      : (err && err.message) || String(err);
    fill(view, h('section', { class: 'card notice notice-error', role: 'alert' },
      h('h1', {}, title), h('p', {}, detail),
      h('p', {}, h('a', { href: `${ROOT}/dashboard/` }, '← Back to the job list'))));
  }

  // ---------------------------------------------------------------- sign-in

  function showLogin(message) {
    stopPolling();
    fill(view);
    document.title = 'Sign in · METRO';
    login.hidden = false;
    signOut.hidden = true;
    loginError.textContent = message || '';
    keyInput.focus();
  }

  loginForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const key = keyInput.value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY_STORAGE, key);
    keyInput.value = '';
    start();
  });

  signOut.addEventListener('click', () => {
    sessionStorage.removeItem(KEY_STORAGE);
    showLogin('The API key was removed from this tab.');
  });

  // ---------------------------------------------------------------- the job list

  async function listPage() {
    document.title = 'Jobs · METRO';
    const url = new URL(location.href);
    const state = { filter: url.searchParams.get('state') || '', jobs: [], pages: 1, cursor: null };

    const filter = h('select', { id: 'state-filter', name: 'state' },
      h('option', { value: '' }, 'All states'),
      STATES.map((s) => h('option', { value: s }, s)));
    filter.value = STATES.includes(state.filter) ? state.filter : '';
    const updated = h('span', { class: 'muted small', id: 'list-updated' });
    const tableHost = h('div', { class: 'table-wrap' });
    const more = h('button', { type: 'button', class: 'button', hidden: true }, 'Load more');

    filter.addEventListener('change', () => {
      state.filter = filter.value;
      const u = new URL(location.href);
      if (state.filter) u.searchParams.set('state', state.filter);
      else u.searchParams.delete('state');
      history.replaceState(history.state, '', u);
      state.pages = 1;
      guard(refresh);
    });
    more.addEventListener('click', () => {
      state.pages += 1;
      guard(refresh);
    });

    fill(view,
      h('div', { class: 'page-head' },
        h('div', {}, h('h1', {}, 'Jobs'),
          h('p', { class: 'muted' }, 'Training jobs of this API key\'s tenant, newest first.')),
        h('div', { class: 'toolbar' },
          h('label', { for: 'state-filter' }, 'State'), filter,
          h('button', { type: 'button', class: 'button', onclick: () => guard(refresh) }, 'Refresh'),
          updated)),
      h('section', { class: 'card flush', 'aria-label': 'Job list' }, tableHost,
        h('div', { class: 'table-foot' }, more)));

    // Re-reads as many pages as are shown, so a refresh never drops rows the user loaded.
    async function refresh() {
      const jobs = [];
      let cursor = null;
      for (let page = 0; page < state.pages; page += 1) {
        const body = await api(withQuery('/v1/jobs', { state: state.filter, cursor }));
        jobs.push(...body.items);
        cursor = body.next_cursor;
        if (!cursor) break;
      }
      state.jobs = jobs;
      state.cursor = cursor;
      state.names = new Map();
      for (const job of jobs) state.names.set(job.dataset_uri, await datasetLabel(job.dataset_uri));
      drawTable();
      markClippedTables();
      more.hidden = !cursor;
      updated.textContent = 'Updated ' + new Date().toLocaleTimeString();
      const active = jobs.filter((j) => ACTIVE_STATES.has(j.state)).length;
      if (active) {
        updated.textContent += ` · refreshing while ${active} job${active > 1 ? 's are' : ' is'} active`;
        schedulePoll(refresh);
      } else stopPolling();
    }

    function drawTable() {
      if (!state.jobs.length) {
        fill(tableHost, h('div', { class: 'empty' },
          h('p', {}, state.filter ? `No ${state.filter} jobs.` : 'No jobs yet.'),
          h('p', { class: 'muted' }, 'Submit one with ', h('code', {}, 'POST /v1/jobs'), ' or ',
            h('code', {}, 'metro submit'), '.')));
        return;
      }
      const rows = state.jobs.map((job) => h('tr', { 'data-job-id': job.id, 'data-state': job.state },
        h('td', {}, h('a', { class: 'mono', href: `${ROOT}/dashboard/jobs/${job.id}`, title: job.id },
          job.id.slice(0, 8))),
        // A queued job no worker can take: "no worker" beside its badge, the server's why in its title.
        h('td', {}, stateBadge(job.state), job.state === 'queued' && job.waiting
          ? h('span', { class: 'muted small waiting-note', title: job.waiting }, ' no worker') : null),
        h('td', { class: 'col-progress' }, progressBar(job.progress, job.state, `Progress of job ${job.id.slice(0, 8)}`)),
        h('td', { class: 'metric-cell' }, metricName(job.spec),
          jobConstraints(job.spec).length ? h('span', { class: 'muted small constraints-note' },
            ` under ${jobConstraints(job.spec).map((c) => c.display_name).join(', ')}`) : null),
        h('td', { class: 'truncate', title: job.dataset_uri, 'data-uri': job.dataset_uri }, state.names.get(job.dataset_uri) || job.dataset_uri),
        h('td', { class: 'num' }, fmtLambda(job.best_lambda)),
        h('td', { class: 'num' }, job.attempts),
        h('td', {}, timeEl(job.created_at)),
        h('td', { class: 'num' }, job.started_at ? fmtDuration(job.started_at, job.finished_at) : '—')));
      fill(tableHost, h('table', { class: 'table', id: 'jobs-table' },
        h('caption', { class: 'sr-only' }, 'Jobs, newest first'),
        h('thead', {}, h('tr', {},
          ['Job', 'State', 'Progress', 'Metric', 'Dataset'].map((t) => h('th', { scope: 'col' }, t)),
          h('th', { scope: 'col', class: 'num' }, 'Trained ', h('span', { class: 'nt' }, 'λ')),
          h('th', { scope: 'col', class: 'num' }, 'Attempts'),
          h('th', { scope: 'col' }, 'Created'),
          h('th', { scope: 'col', class: 'num' }, 'Run time'))),
        h('tbody', {}, rows)));
    }

    await refresh();
  }

  // ---------------------------------------------------------------- the job page

  const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  async function jobPage(jobId) {
    document.title = `Job ${jobId.slice(0, 8)} · METRO`;
    if (!UUID_PATTERN.test(jobId)) {
      // A shortened id (the list shows the first 8 characters) was a raw JSON error page.
      throw new ApiError(404, `'${jobId}' is not a job id: a job's id is its full UUID, as the job list links it`);
    }
    const head = h('div', { class: 'page-head' });
    const overview = h('section', { class: 'card', 'aria-labelledby': 'overview-title' });
    const spec = h('section', { class: 'card', 'aria-labelledby': 'spec-title' });
    const trace = h('section', { class: 'card span-2', id: 'trace', 'aria-labelledby': 'trace-title' });
    const results = h('section', { class: 'card span-2', id: 'results', 'aria-labelledby': 'results-title' });
    const model = h('section', { class: 'card span-2', id: 'model', 'aria-labelledby': 'model-title' });
    fill(view,
      h('nav', { class: 'breadcrumb', 'aria-label': 'Breadcrumb' },
        h('a', { href: `${ROOT}/dashboard/` }, 'Jobs'), h('span', { 'aria-hidden': 'true' }, ' / '),
        h('span', { class: 'mono', 'aria-current': 'page' }, jobId)),
      head, h('div', { class: 'grid' }, overview, spec, trace, results, model));

    let finalDrawn = false;
    let specDrawn = false;
    let lastState = null;

    async function tick() {
      const [job, steps] = await Promise.all([
        api(`/v1/jobs/${jobId}`), apiAll(`/v1/jobs/${jobId}/trace`),
      ]);
      document.body.dataset.jobState = job.state;
      document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
      if (lastState !== null && lastState !== job.state) announce(`The job is now ${job.state}.`);
      lastState = job.state;
      job.dataset_label = await datasetLabel(job.dataset_uri);
      drawHead(head, job, tick);
      drawOverview(overview, job, steps);
      fitOverview(overview);
      if (!specDrawn) {
        drawSpec(spec, job);
        specDrawn = true;
      }
      drawTrace(trace, job, steps);
      if (job.state === 'succeeded' && !finalDrawn) {
        const [result, found] = await Promise.all([api(`/v1/jobs/${jobId}/result`), findModel(job)]);
        methodNames = result.method_names || {};
        drawResults(results, result, targetWord(job));
        drawModel(model, found, job);
        finalDrawn = true;
      } else if (!finalDrawn) {
        drawPending(results, 'results-title', 'Results', job);
        drawModel(model, null, job);
      }
      if (ACTIVE_STATES.has(job.state)) schedulePoll(tick);
      else stopPolling();
      markClippedTables();
      document.body.dataset.ready = 'true';
    }

    await tick();
  }

  // The Progress card shares the page's width with the specification; when its per-repeat
  // table cannot fit in that half even with its cells wrapped (many constraints), the card
  // takes the whole width instead of cutting the table off.
  function fitOverview(card) {
    card.classList.remove('span-2');
    const wrap = card.querySelector('.table-wrap');
    const wide = Boolean(wrap) && wrap.scrollWidth > wrap.clientWidth + 1;
    card.classList.toggle('span-2', wide);
    card.dataset.wide = String(wide);
  }

  // A table wider than its card is cut off there (it scrolls, which a reader may not notice):
  // each such table is marked with the pixels it overflows by, where a test (or a person in the
  // inspector) can see it.
  function markClippedTables() {
    for (const wrap of view.querySelectorAll('.table-wrap')) {
      const over = wrap.closest('details:not([open])') ? 0 : wrap.scrollWidth - wrap.clientWidth;
      if (over > 1) wrap.dataset.clipped = String(over);
      else delete wrap.dataset.clipped;
    }
  }

  // The job's model: models are listed newest first and made after their job, so paging stops
  // at the first model older than the job.
  async function findModel(job) {
    const created = parseTime(job.created_at);
    const models = await apiAll('/v1/models',
      (items) => items.some((m) => m.job_id === job.id)
        || (items.length && parseTime(items[items.length - 1].created_at) < created));
    return models.find((m) => m.job_id === job.id) || null;
  }

  function drawHead(el, job, refresh) {
    const actions = h('div', { class: 'toolbar' });
    if (ACTIVE_STATES.has(job.state) && job.state !== 'cancelling') {
      actions.append(h('button', {
        type: 'button', class: 'button danger',
        onclick: () => guard(async () => {
          if (!window.confirm('Cancel this job?')) return;
          await api(`/v1/jobs/${job.id}/cancel`, 'POST');
          await refresh();
        }),
      }, 'Cancel job'));
    }
    if (!ACTIVE_STATES.has(job.state)) {
      // A finished job can be deleted with everything it made (DELETE /v1/jobs/{id}): its
      // trace, results and model, rows and files. Its dataset stays.
      actions.append(h('button', {
        type: 'button', class: 'button danger', id: 'delete-job',
        onclick: () => guard(async () => {
          if (!window.confirm('Delete this job with its trace, results and model? '
            + 'Its dataset stays. This cannot be undone.')) return;
          await apiFetch(`/v1/jobs/${job.id}`, 'DELETE');
          location.assign(`${ROOT}/dashboard/`);
        }),
      }, 'Delete job'));
    }
    if (ACTIVE_STATES.has(job.state)) {
      actions.append(h('span', { class: 'live', title: `Refreshed every ${POLL_MS / 1000} s` },
        h('span', { class: 'live-dot', 'aria-hidden': 'true' }), 'Live'));
    }
    fill(el,
      h('div', {},
        h('h1', {}, 'Job ', h('span', { class: 'mono', title: job.id }, job.id.slice(0, 8)), ' ',
          stateBadge(job.state)),
        h('p', { class: 'muted' }, `${metricName(job.spec)} on `, datasetEl(job.dataset_uri, job.dataset_label))),
      actions);
  }

  function dl(pairs) {
    return h('dl', { class: 'facts' }, pairs.filter(Boolean).map(([term, value]) => [
      h('dt', {}, term), h('dd', {}, value),
    ]));
  }

  function drawOverview(el, job, steps) {
    const running = ACTIVE_STATES.has(job.state);
    const children = [
      h('h2', { id: 'overview-title' }, 'Progress'),
      progressBar(job.progress, job.state, 'Job progress'),
    ];
    if (job.state === 'failed' && job.failure_reason) {
      children.push(h('div', { class: 'notice notice-error', role: 'alert' },
        h('strong', {}, 'Failed: '), job.failure_reason));
    }
    // The server says why a queued job waits (no worker serves its queue): a cuda job with no
    // GPU worker sat at 0% without a word.
    if (job.state === 'queued' && job.waiting) {
      children.push(h('div', { class: 'notice notice-warning', id: 'job-waiting', role: 'status' },
        h('strong', {}, 'Waiting: '), job.waiting));
    }
    const choices = job.choices || [];
    // An averaged job (metric.average): a choice per class, each with its own λ.
    const perClass = choices.some((c) => c.label !== null && c.label !== undefined);
    const delivered = perClass ? null : choices[0];
    const name = metricName(job.spec);
    const constraints = jobConstraints(job.spec);
    const chosenConstraints = chosenConstraintsEl(choices, constraints);
    children.push(dl([
      ['State', stateBadge(job.state)],
      running && ['Current λ', h('span', { class: 'num' }, fmtLambda(job.current_lambda))],
      perClass && multinomialJob(job)
        ? ['Trained λ', h('span', { id: 'best-lambda' }, 'none (a multinomial logistic regression with tuned offsets)')]
        : perClass
        ? ['Trained λ', h('span', { id: 'best-lambda' }, `one per ${targetWord(job)} (below)`)]
        // exact: one fit, whose λ (the middle of the range) changes nothing
        : choices.some((c) => c.strategy === 'exact')
        ? ['Trained λ', h('span', { id: 'best-lambda' }, 'none: exact (one fit, no search over λ)')]
        : ['Trained λ', [h('span', { class: 'num', id: 'best-lambda' }, fmtLambda(job.best_lambda)),
          delivered ? h('span', { class: 'muted', id: 'trained-shift' }, ` shift ${delivered.shift}${choices.length > 1 ? ' (repeat 0, the model delivered)' : ''}`) : null]],
      // an averaged job chose by its average: the results card has it
      choices.length && !perClass && ['Best', h('span', { id: 'selection-score' }, selectionText(choices, name) || '—')],
      chosenConstraints && ['Constraints', chosenConstraints],
      ['Trace steps', String(steps.length)],
      ['Attempts', String(job.attempts)],
      ['Created', timeEl(job.created_at)],
      ['Started', timeEl(job.started_at)],
      ['Finished', timeEl(job.finished_at)],
      ['Run time', job.started_at ? fmtDuration(job.started_at, job.finished_at) : '—'],
    ]));
    if (choices.length) children.push(choicesTable(choices, name, constraints, targetWord(job), !multinomialJob(job)));
    children.push(fallbackBlock(choices, targetWord(job)));
    children.push(warningsBlock(choices, targetWord(job)));
    fill(el, ...children);
  }

  function drawSpec(el, job) {
    const s = job.spec || {};
    const search = s.search || {};
    const model = s.model || {};
    const surrogate = s.surrogate || {};
    const training = s.training || {};
    const extra = (obj, skip) => Object.entries(obj)
      .filter(([k, v]) => !skip.includes(k) && v !== null && v !== undefined)
      .map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : v}`).join(', ');
    let modelText = model.kind || 'linear';
    if (model.kind === 'mlp' && model.hidden) modelText += ` (hidden ${model.hidden.join('×')})`;
    if (model.kind === 'cnn3' && model.channels) modelText += ` (channels ${model.channels.join('/')})`;
    // exact: the metric's denominator does not depend on the predictions, so one fit was
    // exact and no search over lambda ran, whatever search.strategy asked.
    const exact = (job.choices || []).some((c) => c.strategy === 'exact');
    let searchText = exact ? 'exact (one fit, no search over λ)' : (search.strategy || '—');
    if (!exact && search.strategy === 'grid' && search.n_lambdas) searchText += `, ${search.n_lambdas} lambdas`;
    // cv: a number of folds, "auto" (5 folds up to 20,000 rows, a holdout above: the choices
    // say which it was) or null (a holdout). It read "auto-fold CV".
    if (typeof search.cv === 'number') searchText += `, ${search.cv}-fold CV`;
    else if (search.cv === 'auto') {
      const folds = (job.choices || []).map((c) => c.n_folds).find((n) => n);
      searchText += folds ? `, ${folds}-fold CV (auto)` : ', CV (auto)';
    }
    // search.multiclass multinomial: no λ search, no surrogate; offsets tuned on the folds.
    if (multinomialJob(job)) {
      const folds = (job.choices || []).map((c) => c.n_folds).find((n) => n);
      searchText = `none: one multinomial logistic regression, offsets tuned${folds ? ` on ${folds} folds` : ''} (search.multiclass)`;
    }
    fill(el,
      h('h2', { id: 'spec-title' }, 'Specification'),
      dl([
        ['Metric', `${metricName(s)}${s.metric_info && s.metric_info.greater_is_better === false ? ' (lower is better)' : ''}`],
        jobConstraints(s).length && ['Constraints', h('span', { id: 'spec-constraints' },
          jobConstraints(s).map((c) => c.display_name).join(', '))],
        ['Dataset', datasetEl(job.dataset_uri, job.dataset_label)],
        // Columns left out of the features (dataset.ignore_columns): what the model reads.
        ((s.dataset || {}).ignore_columns || []).length && ['Not features', h('span', { id: 'spec-ignored' },
          s.dataset.ignore_columns.join(', '))],
        ['Surrogate', multinomialJob(job) ? '— (a multinomial logistic regression)'
          : [surrogate.name || 'logistic', extra(surrogate, ['name'])].filter(Boolean).join(': ')],
        ['Model', modelText],
        ['Search', searchText],
        ['Training', [training.optimizer && `optimizer ${training.optimizer}`, training.device && `device ${training.device}`].filter(Boolean).join(', ') || '—'],
        ['Repeats', String(s.repeats || 1)],
        // An averaged job runs its own baselines whatever the spec lists (the results name them).
        ['Baselines', s.metric && s.metric.average
          ? 'those every averaged job runs (listed under Results)'
          : (s.baselines || []).length ? s.baselines.join(', ') : 'none'],
      ]),
      h('details', { class: 'raw' }, h('summary', {}, 'Normalized spec (JSON)'),
        h('pre', {}, JSON.stringify(s, null, 2))));
  }

  function drawPending(el, titleId, title, job) {
    const text = {
      queued: 'The job is waiting for a worker.',
      running: 'Available when the job has succeeded.',
      cancelling: 'The job is being cancelled.',
      failed: 'The job failed: there are no results.',
      cancelled: 'The job was cancelled: there are no results.',
    }[job.state] || '';
    fill(el, h('h2', { id: titleId }, title), h('p', { class: 'muted' }, text));
  }

  // ---------------------------------------------------------------- the lambda trace

  function extent(values) {
    const finite = values.filter((v) => v !== null && v !== undefined && Number.isFinite(v));
    if (!finite.length) return [0, 1];
    let lo = Math.min(...finite);
    let hi = Math.max(...finite);
    if (lo === hi) {
      const d = Math.abs(lo) * 0.1 || 0.5;
      return [lo - d, hi + d];
    }
    const pad = (hi - lo) * 0.06;
    lo -= pad;
    hi += pad;
    return [lo, hi];
  }

  function niceStep(lo, hi, count) {
    const raw = (hi - lo) / count;
    const mag = 10 ** Math.floor(Math.log10(raw));
    const r = raw / mag;
    return (r >= 7.5 ? 10 : r >= 3.5 ? 5 : r >= 1.5 ? 2 : 1) * mag;
  }

  function ticks(lo, hi, count) {
    const step = niceStep(lo, hi, count);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
      out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    const decimals = Math.max(0, -Math.floor(Math.log10(step)));
    const big = Math.max(Math.abs(lo), Math.abs(hi));
    const label = (v) => (big >= 1e5 || decimals > 4 ? v.toExponential(1) : v.toFixed(decimals));
    return out.map((v) => ({ value: v, label: label(v) }));
  }

  function sameLambda(a, b) {
    return a !== null && b !== null && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  }

  function drawTrace(el, job, steps) {
    const running = ACTIVE_STATES.has(job.state);
    const name = metricName(job.spec);
    const chosen = job.best_lambda;
    const constraints = jobConstraints(job.spec);
    const children = [
      h('div', { class: 'card-head' },
        h('h2', { id: 'trace-title' }, 'Lambda search'),
        h('span', { class: 'muted small' }, `${steps.length} step${steps.length === 1 ? '' : 's'}`)),
    ];
    if (!steps.length) {
      children.push(h('p', { class: 'muted' }, running
        ? 'No lambda has been fitted yet; points appear here as the search runs.'
        : 'This job recorded no lambda steps.'));
      fill(el, ...children);
      return;
    }
    const hasMu = (s) => s.mu !== null && s.mu !== undefined;
    const constrained = steps.some(hasMu);
    // An averaged job's steps are each one class's (or label's) own search, scored by that
    // class's metric (F1, not "F1 (macro)"): a colour per class, named in the legend.
    const hasClass = (s) => s.class_index !== null && s.class_index !== undefined;
    const classIndices = [...new Set(steps.filter(hasClass).map((s) => s.class_index))].sort((a, b) => a - b);
    const plotName = classIndices.length ? name.split(' (')[0] : name;
    const repeats = [...new Set(steps.map((s) => s.repeat))].sort((a, b) => a - b);
    const shifts = [...new Set(steps.map((s) => s.shift || ''))].sort();
    const mus = [...new Set(steps.filter(hasMu).map((s) => s.mu))].sort((a, b) => a - b);
    // One series per (repeat, shift), and per multiplier mu under constraints: color tells the
    // repeats apart (the multipliers under constraints), the dash the shifts.
    const colorOf = (s) => (constrained
      ? REPEAT_COLORS[mus.indexOf(s.mu) % REPEAT_COLORS.length]
      : hasClass(s)
        ? REPEAT_COLORS[classIndices.indexOf(s.class_index) % REPEAT_COLORS.length]
        : REPEAT_COLORS[repeats.indexOf(s.repeat) % REPEAT_COLORS.length]);
    const dashOf = (shift) => SHIFT_DASHES[shifts.indexOf(shift || '') % SHIFT_DASHES.length];
    // The curve each repeat's choice ran over (grid searches): pooled over the folds at each
    // lambda's own tuned threshold, which the folds' own lines (at threshold 0) are not.
    // An averaged job's choices are one per class, each over its own class's curve: the plot
    // draws its classes' lines and leaves the choices to the per-class tables.
    const binaryChoices = (job.choices || []).filter((c) => c.label === null || c.label === undefined);
    const curves = binaryChoices
      .filter((c) => Array.isArray(c.selection_curve) && c.selection_curve.length)
      .map((c) => ({
        repeat: c.repeat, trained: c.trained_lambda, shift: c.shift, split: selectionLabel(c),
        points: c.selection_curve,
        // The safeguard's fallback decides at a threshold the held-out rows back, not at the
        // curve's: its score is the choice's own, never the curve's point at its lambda.
        fallbackScore: c.fallback ? c.selection_score : null,
      }));
    // Every repeat's choice, marked in the plot: on its pooled curve where the choice carries
    // one, else at the score it chose by (bisection, Dinkelbach and constrained searches, and
    // jobs recorded before selection_curve).
    const marked = binaryChoices
      .filter((c) => c && c.trained_lambda !== null && c.trained_lambda !== undefined)
      .map((c) => ({
        repeat: c.repeat, trained: c.trained_lambda, shift: c.shift, split: selectionLabel(c),
        score: choiceScore(c), refined: c.refinement && c.refinement.kept ? c.selection_score : null,
        color: (constrained ? CHOSEN_COLOR : colorOf({ repeat: c.repeat })) || CHOSEN_COLOR,
      }));
    const many = (job.choices || []).length > 1;
    // Under constraints the delivered fit is one (lambda, mu): only its series is ringed (every
    // multiplier's fit at that lambda was).
    const first = binaryChoices.find((c) => c.repeat === 0);
    const chosenMu = first && first.mu !== null && first.mu !== undefined ? first.mu : null;
    children.push(tracePlot(steps, chosen, plotName, colorOf, dashOf, running, constraints, curves, marked, chosenMu));

    const legend = h('ul', { class: 'legend', 'aria-label': 'Legend' });
    for (const c of classIndices) {
      const step = steps.find((s) => s.class_index === c);
      const swatch = svg('svg', { class: 'swatch-line', width: 26, height: 10, 'aria-hidden': 'true' },
        svg('line', { x1: 1, x2: 25, y1: 5, y2: 5, stroke: colorOf(step), 'stroke-width': 2 }));
      legend.append(h('li', { class: 'series', 'data-class': String(step.label) }, swatch,
        `${targetWord(job)} ${step.label}`));
    }
    if (!classIndices.length && (repeats.length > 1 || shifts.length > 1 || constrained)) {
      for (const r of repeats) {
        for (const shift of shifts) {
          for (const mu of constrained ? mus : [null]) {
            if (!steps.some((s) => s.repeat === r && (s.shift || '') === shift && (mu === null || s.mu === mu))) continue;
            const swatch = svg('svg', { class: 'swatch-line', width: 26, height: 10, 'aria-hidden': 'true' },
              svg('line', { x1: 1, x2: 25, y1: 5, y2: 5, stroke: colorOf({ repeat: r, mu }), 'stroke-width': 2, 'stroke-dasharray': dashOf(shift) }));
            const label = [mu !== null ? `μ = ${fmtLambda(mu)}` : null, repeats.length > 1 ? `repeat ${r}` : null,
              shift && (shifts.length > 1 || mu === null) ? `shift ${shift}` : null].filter(Boolean).join(', ');
            legend.append(h('li', { class: 'series', 'data-repeat': r, 'data-shift': shift, 'data-mu': mu === null ? '' : mu }, swatch, label));
          }
        }
      }
    }
    if (steps.some((s) => s.validation_metric === null && s.train_metric !== null)) {
      legend.append(h('li', {}, h('span', { class: 'swatch hollow', 'aria-hidden': 'true' }),
        `hollow: train ${plotName} (no validation value)`));
    }
    if (chosen !== null && chosen !== undefined) {
      legend.append(h('li', {}, h('span', { class: 'swatch chosen', 'aria-hidden': 'true' }),
        `trained λ = ${fmtLambda(chosen)}${(job.choices || []).length > 1 ? ' (repeat 0)' : ''}`));
    }
    const curveOf = new Map(curves.map((c) => [c.repeat, c]));
    if (curves.length && steps.some((s) => s.fold !== null)) {
      legend.append(h('li', { class: 'fold-key' },
        svg('svg', { class: 'swatch-line', width: 26, height: 10, 'aria-hidden': 'true' },
          svg('line', { x1: 1, x2: 25, y1: 5, y2: 5, stroke: '#64748b', 'stroke-width': 1, 'stroke-opacity': 0.5 })),
        `thin, faint: one fold's own held-out ${name} (at threshold 0)`));
    }
    for (const m of marked) {
      const curve = curveOf.get(m.repeat);
      const swatch = svg('svg', { class: 'swatch-line', width: 26, height: 14, 'aria-hidden': 'true' },
        curve ? svg('line', { x1: 1, x2: 25, y1: 7, y2: 7, stroke: m.color, 'stroke-width': 3.2 }) : null,
        svg('circle', { cx: 13, cy: 7, r: 4.5, fill: m.color, stroke: CHOSEN_COLOR, 'stroke-width': 2 }));
      legend.append(h('li', { class: 'choice-key', 'data-repeat': m.repeat, 'data-lambda': m.trained, 'data-curve': curve ? 'true' : 'false' },
        swatch, choiceText(m, name, many, Boolean(curve))));
    }
    if (legend.childElementCount) children.push(legend);
    if (constrained) {
      children.push(h('p', { class: 'muted small' }, 'μ: the multiplier of the constraints a fit was trained with (0: the metric alone); ',
        'the lower panels show each constraint where the metric is measured, its bound dashed.'));
    }

    const hasFolds = steps.some((s) => s.fold !== null);
    // An averaged job's steps are each one class's (or label's) own search, scored by that
    // class's metric: said per row, and the columns named by the class's metric, not the mean.
    const perClass = steps.some((s) => s.label !== null && s.label !== undefined);
    const classWord = capital(targetWord(job));
    const stepName = perClass ? name.split(' (')[0] : name;
    const constraintCell = (s, j) => h('td', { class: 'num', 'data-constraint': j }, fmtNum((s.constraint_values || [])[j]));
    children.push(h('details', { class: 'raw' },
      h('summary', {}, 'The trace as a table'),
      h('div', { class: 'table-wrap' }, h('table', { class: 'table compact', id: 'trace-table' },
        h('thead', {}, h('tr', {},
          ['Repeat', 'Step'].concat(perClass ? [classWord] : []).concat(hasFolds ? ['Fold'] : []).concat(constrained ? ['μ'] : [])
            // Under cross-validation a step's held-out score is its fold's (at threshold 0), not
            // a validation split's.
            .concat(['λ', 'Shift', 'Surrogate loss', 'l^λ', `Train ${stepName}`,
              hasFolds ? `Held-out ${stepName}` : `Validation ${stepName}`])
            .concat(constraints.map((c) => c.display_name)).concat(['Seconds'])
            .map((t) => h('th', { scope: 'col', class: t === 'Shift' ? null : 'num' },
              t.includes('λ') || t === 'μ' ? h('span', { class: 'nt' }, t) : t)))),
        h('tbody', {}, steps.map((s) => h('tr', { class: sameLambda(s.lambda, chosen) ? 'is-chosen' : null },
          h('td', { class: 'num' }, s.repeat), h('td', { class: 'num' }, s.step),
          perClass ? h('td', { 'data-label': String(s.label) }, String(s.label)) : null,
          hasFolds ? h('td', { class: 'num' }, s.fold === null ? '—' : s.fold) : null,
          constrained ? h('td', { class: 'num' }, hasMu(s) ? fmtLambda(s.mu) : '—') : null,
          h('td', { class: 'num' }, fmtLambda(s.lambda)), h('td', {}, s.shift || '—'),
          h('td', { class: 'num' }, fmtNum(s.surrogate_loss)), h('td', { class: 'num' }, fmtNum(s.l_lambda)),
          h('td', { class: 'num' }, fmtNum(s.train_metric)), h('td', { class: 'num' }, fmtNum(s.validation_metric)),
          constraints.map((_, j) => constraintCell(s, j)),
          h('td', { class: 'num' }, fmtNum(s.seconds, 2)))))))));
    if (curves.length) children.push(pooledTable(curves, name));
    fill(el, ...children);
  }

  // The score a repeat's lambda was chosen by: the search's own at that lambda, which is the
  // refinement's score_before where a refined model was kept (selection_score is then the
  // refined model's, not a point of the lambda search).
  function choiceScore(c) {
    const step = c.refinement;
    if (step && step.kept && step.score_before !== null && step.score_before !== undefined) return step.score_before;
    return c.selection_score === undefined ? null : c.selection_score;
  }

  // "repeat 1: pooled F1 (3-fold CV), chose λ = -0.5 at 0.8750": a repeat's entry in the
  // legend, and in the plot's text alternative.
  function choiceText(m, name, many, onCurve) {
    const who = many ? `repeat ${m.repeat}` : '';
    const at = `λ = ${fmtLambda(m.trained)}${m.shift ? ` (shift ${m.shift})` : ''}`;
    // A kept refinement is what "Best" shows: said beside the curve's point too, which is the
    // score before it (the legend said "at 0.4333" beside a Best of 0.5200).
    const refined = m.refined !== null && m.refined !== undefined ? `, refined model ${fmtNum(m.refined)}` : '';
    const score = `${name} ${fmtNum(m.score)} (${m.split})${refined}`;
    return onCurve
      ? `${who ? `${who}: ` : ''}pooled ${name} (${m.split}), chose ${at} at ${fmtNum(m.score)}${refined}`
      : `${who ? `${who} ` : ''}chose ${at}: ${score}`;
  }

  // Each repeat's pooled curve as numbers: one row per (shift, lambda), one column per repeat,
  // the lambda each repeat chose marked.
  function pooledTable(curves, name) {
    const shifts = [...new Set(curves.flatMap((c) => c.points.map((q) => q.shift || '')))].sort();
    const rows = [];
    for (const shift of shifts) {
      const lambdas = [...new Set(curves.flatMap((c) => c.points.filter((q) => (q.shift || '') === shift).map((q) => q.lambda)))]
        .sort((a, b) => a - b);
      for (const lam of lambdas) rows.push({ shift, lam });
    }
    const cell = (c, row) => {
      const q = c.points.find((p) => (p.shift || '') === row.shift && sameLambda(p.lambda, row.lam));
      const isChoice = (c.shift || '') === row.shift && sameLambda(row.lam, c.trained);
      return h('td', {
        class: `num${isChoice ? ' is-chosen' : ''}`, 'data-repeat': c.repeat, 'data-lambda': row.lam,
        'data-chosen': isChoice ? 'true' : null,
      }, q ? fmtNum(q.score) : '—', isChoice ? h('span', { class: 'chosen-tag' }, c.fallbackScore === null
        ? ' chosen' : ` chosen, ${fmtNum(c.fallbackScore)} at the fallback's threshold`) : null);
    };
    return h('details', { class: 'raw' },
      h('summary', {}, `The pooled ${name} curves as a table`),
      h('div', { class: 'table-wrap' }, h('table', { class: 'table compact', id: 'pooled-table' },
        h('caption', { class: 'sr-only' },
          `Each repeat's ${name} at every lambda, on its selection split (${curves[0].split}: the folds' held-out rows pooled), at that lambda's tuned threshold; the lambda each repeat chose is marked`),
        h('thead', {}, h('tr', {},
          h('th', { scope: 'col', class: 'num' }, h('span', { class: 'nt' }, 'λ')),
          shifts.length > 1 ? h('th', { scope: 'col' }, 'Shift') : null,
          curves.map((c) => h('th', { scope: 'col', class: 'num' }, `Repeat ${c.repeat} (${c.split})`)))),
        h('tbody', {}, rows.map((row) => h('tr', { 'data-lambda': row.lam },
          h('td', { class: 'num' }, fmtLambda(row.lam)),
          shifts.length > 1 ? h('td', {}, row.shift || '—') : null,
          curves.map((c) => cell(c, row))))))));
  }

  // Panels sharing the lambda axis: the validation metric (top), the surrogate loss, and under
  // constraints each constraint's value with its bound; one point per trace step, lines joining
  // the steps of one series (repeat, fold, shift, multiplier), and the chosen lambda as a
  // dashed vertical line across all of them.
  function tracePlot(steps, chosen, name, colorOf, dashOf, running, constraints, curves = [], marked = [], chosenMu = null) {
    const W = 800;
    const M = { left: 70, right: 24, top: 30, bottom: 46 };
    const GAP = 30;
    const innerW = W - M.left - M.right;
    const finite = (v) => v !== null && v !== undefined && Number.isFinite(v);
    const metricOf = (s) => (s.validation_metric !== null ? s.validation_metric : s.train_metric);
    const anyValidation = steps.some((s) => s.validation_metric !== null);
    // A fold's step is scored on that fold's held-out rows, whether or not a pooled curve came
    // with the trace (a constrained job's has none): "validation" named the other split.
    const folded = steps.some((s) => s.fold !== null && s.fold !== undefined);
    const panels = [
      { kind: 'metric', height: 200, valueOf: metricOf, label: curves.length || (folded && anyValidation) ? `held-out ${name}` : anyValidation ? `validation ${name}` : `train ${name}` },
      { kind: 'loss', height: 140, valueOf: (s) => s.surrogate_loss, label: 'surrogate loss' },
    ].concat(constraints.map((c, j) => ({
      kind: 'constraint', index: j, height: 120, valueOf: (s) => (s.constraint_values || [])[j],
      label: c.display_name, bound: c.bound,
    })));
    let top = M.top;
    const curveScores = curves.flatMap((c) => c.points.map((q) => q.score).filter(finite))
      .concat(marked.map((m) => m.score).filter(finite));
    for (const p of panels) {
      p.top = top;
      top += p.height + GAP;
      const values = steps.map(p.valueOf).concat(p.bound !== undefined ? [p.bound] : [])
        .concat(p.kind === 'metric' ? curveScores : []);
      p.dom = extent(values);
      p.y = (v) => p.top + p.height - ((v - p.dom[0]) / (p.dom[1] - p.dom[0])) * p.height;
    }
    const last = panels[panels.length - 1];
    const bottom = last.top + last.height;
    const H = bottom + M.bottom;

    const hasChosen = chosen !== null && chosen !== undefined;
    const xDom = extent(steps.map((s) => s.lambda).concat(hasChosen ? [chosen] : [])
      .concat(marked.map((m) => m.trained)));
    const x = (v) => M.left + ((v - xDom[0]) / (xDom[1] - xDom[0])) * innerW;

    const nFolds = new Set(steps.filter((s) => s.fold !== null).map((s) => s.fold)).size;
    const withCurve = new Set(curves.map((c) => c.repeat));
    const many = marked.length > 1 || curves.length > 1;
    const desc = `${name}, surrogate loss${constraints.length ? ' and the constraints' : ''} against lambda for ${steps.length} steps`
      + (hasChosen ? `; trained lambda ${fmtLambda(chosen)}` : '')
      + (curves.length ? `; thick lines: each repeat's pooled ${name} over the lambdas (${curves[0].split}, each lambda at its tuned threshold), the curve the choice was made on` : '')
      + (curves.length && nFolds ? `; thin, faint lines in the background: each of the ${nFolds} folds' own held-out ${name} at threshold 0` : '')
      + (marked.length ? `; marked: ${marked.map((m) => choiceText(m, name, many, withCurve.has(m.repeat))).join('; ')}` : '');
    const root = svg('svg', {
      class: 'trace-plot', id: 'trace-plot', viewBox: `0 0 ${W} ${H}`, role: 'img',
      'aria-labelledby': 'trace-plot-title trace-plot-desc', 'data-steps': steps.length,
      preserveAspectRatio: 'xMidYMid meet',
    },
    svg('title', { id: 'trace-plot-title' }, `Lambda trace: ${name} and surrogate loss`),
    svg('desc', { id: 'trace-plot-desc' }, desc));

    const xTicks = ticks(xDom[0], xDom[1], 8);
    for (const p of panels) {
      const g = svg('g', { class: 'panel', 'data-panel': p.kind });
      g.append(svg('rect', { class: 'panel-bg', x: M.left, y: p.top, width: innerW, height: p.height }));
      for (const t of xTicks) {
        g.append(svg('line', { class: 'grid', x1: x(t.value), x2: x(t.value), y1: p.top, y2: p.top + p.height }));
      }
      for (const t of ticks(p.dom[0], p.dom[1], p.height > 160 ? 5 : 4)) {
        g.append(svg('line', { class: 'grid', x1: M.left, x2: M.left + innerW, y1: p.y(t.value), y2: p.y(t.value) }));
        g.append(svg('text', { class: 'tick', x: M.left - 8, y: p.y(t.value), 'text-anchor': 'end', 'dominant-baseline': 'middle' }, t.label));
      }
      g.append(svg('rect', { class: 'panel-frame', x: M.left, y: p.top, width: innerW, height: p.height }));
      g.append(svg('text', {
        class: 'axis-label', 'text-anchor': 'middle',
        transform: `translate(${16} ${p.top + p.height / 2}) rotate(-90)`,
      }, p.label));
      if (p.bound !== undefined) {
        g.append(svg('line', {
          class: 'constraint-bound', 'data-constraint': p.index, 'data-bound': p.bound,
          x1: M.left, x2: M.left + innerW, y1: p.y(p.bound), y2: p.y(p.bound),
        }, svg('title', {}, `bound: ${p.label}`)));
      }
      root.append(g);
    }
    for (const t of xTicks) {
      root.append(svg('text', { class: 'tick', x: x(t.value), y: bottom + 18, 'text-anchor': 'middle' }, t.label));
    }
    root.append(svg('text', { class: 'axis-label', x: M.left + innerW / 2, y: H - 8, 'text-anchor': 'middle' }, 'λ'));

    // Lines: the steps of one (method, repeat, fold, shift, mu), in lambda order; an averaged
    // job's classes each have their own search, so their own lines too.
    const groups = new Map();
    for (const s of steps) {
      const mu = s.mu === null || s.mu === undefined ? '' : s.mu;
      const cls = s.class_index === null || s.class_index === undefined ? '' : s.class_index;
      const key = `${s.method}|${s.repeat}|${s.fold === null ? '' : s.fold}|${s.shift || ''}|${mu}|${cls}`;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(s);
    }
    const lines = svg('g', { class: 'lines' });
    for (const group of groups.values()) {
      const sorted = group.slice().sort((a, b) => a.lambda - b.lambda);
      const first = sorted[0];
      for (const p of panels) {
        const pts = sorted.filter((s) => finite(p.valueOf(s)));
        if (pts.length < 2) continue;
        const d = pts.map((s, i) => `${i ? 'L' : 'M'}${x(s.lambda).toFixed(1)},${p.y(p.valueOf(s)).toFixed(1)}`).join(' ');
        // With folds (cross-validation), each fold's own line is background: the pooled curve
        // below is what the choice was made on.
        const isFold = first.fold !== null && curves.length > 0;
        lines.append(svg('path', {
          class: `series-line${isFold ? ' fold-line' : ''}`, d, stroke: colorOf(first),
          'stroke-dasharray': dashOf(first.shift),
          'data-repeat': first.repeat, 'data-shift': first.shift || '',
          'data-fold': first.fold === null ? '' : first.fold,
          'data-mu': first.mu === null || first.mu === undefined ? '' : first.mu, 'data-panel': p.kind,
        }));
      }
    }
    root.append(lines);

    // Each repeat's pooled curve, prominent, and the lambda it chose marked on it.
    const metricPanel = panels[0];
    const pooled = svg('g', { class: 'pooled-curves' });
    const marks = svg('g', { class: 'repeat-choices' });
    for (const c of curves) {
      const color = colorOf({ repeat: c.repeat, mu: null });
      const byShift = new Map();
      for (const q of c.points) {
        if (!finite(q.score)) continue;
        if (!byShift.has(q.shift)) byShift.set(q.shift, []);
        byShift.get(q.shift).push(q);
      }
      for (const [shift, qs] of byShift) {
        const sorted = qs.slice().sort((a, b) => a.lambda - b.lambda);
        const d = sorted.map((q, i) => `${i ? 'L' : 'M'}${x(q.lambda).toFixed(1)},${metricPanel.y(q.score).toFixed(1)}`).join(' ');
        pooled.append(svg('path', {
          class: 'pooled-curve', d, stroke: color, 'stroke-dasharray': dashOf(shift),
          'data-repeat': c.repeat, 'data-shift': shift, 'data-points': sorted.length,
        }, svg('title', {}, `repeat ${c.repeat}: ${name} by ${c.split}, each λ at its tuned threshold${shift ? ` (shift ${shift})` : ''}`)));
      }
      const at = c.fallbackScore === null
        ? c.points.find((q) => q.shift === c.shift && sameLambda(q.lambda, c.trained)) : null;
      if (at && finite(at.score)) {
        marks.append(svg('circle', {
          class: 'repeat-choice', cx: x(at.lambda), cy: metricPanel.y(at.score), r: 6,
          fill: color, stroke: CHOSEN_COLOR, 'data-repeat': c.repeat, 'data-lambda': at.lambda,
          'data-score': at.score, 'data-on': 'curve',
        }, svg('title', {}, `repeat ${c.repeat} chose λ = ${fmtLambda(at.lambda)}: ${name} ${fmtNum(at.score)} (${c.split})`)));
      }
    }
    for (const m of marked) {
      if (marks.querySelector(`[data-repeat="${m.repeat}"]`) || !finite(m.score)) continue;
      marks.append(svg('circle', {
        class: 'repeat-choice', cx: x(m.trained), cy: metricPanel.y(m.score), r: 6,
        fill: m.color, stroke: CHOSEN_COLOR, 'data-repeat': m.repeat, 'data-lambda': m.trained,
        'data-score': m.score, 'data-on': 'selection',
      }, svg('title', {}, choiceText(m, name, true, false))));
    }
    root.append(pooled);

    // The chosen lambda, under the points.
    if (hasChosen) {
      const cx = x(chosen);
      const label = `trained λ = ${fmtLambda(chosen)}`;
      const anchor = cx > M.left + innerW * 0.85 ? 'end' : cx < M.left + innerW * 0.15 ? 'start' : 'middle';
      root.append(svg('g', { class: 'chosen-lambda', id: 'chosen-lambda', 'data-lambda': chosen },
        svg('line', { x1: cx, x2: cx, y1: M.top - 4, y2: bottom, stroke: CHOSEN_COLOR }),
        svg('text', { x: cx, y: M.top - 10, 'text-anchor': anchor, fill: CHOSEN_COLOR }, label)));
    }

    const points = svg('g', { class: 'points' });
    for (const s of steps) {
      const color = colorOf(s);
      const mu = s.mu === null || s.mu === undefined ? null : s.mu;
      const where = `repeat ${s.repeat}, step ${s.step}${s.fold !== null ? `, fold ${s.fold}` : ''}${s.shift ? `, shift ${s.shift}` : ''}${mu !== null ? `, μ ${fmtLambda(mu)}` : ''}`;
      const isChosen = hasChosen && sameLambda(s.lambda, chosen) && (chosenMu === null || mu === chosenMu);
      const fold = s.fold !== null && curves.length > 0 ? ' is-fold' : '';  // background, as its line
      const common = {
        'data-lambda': s.lambda, 'data-repeat': s.repeat, 'data-step': s.step,
        'data-mu': mu === null ? null : mu,
      };
      for (const p of panels) {
        const v = p.valueOf(s);
        if (!finite(v)) continue;
        if (p.kind === 'metric') {
          if (isChosen && !fold) {
            points.append(svg('circle', { class: 'chosen-halo', cx: x(s.lambda), cy: p.y(v), r: 8, stroke: CHOSEN_COLOR }));
          }
          const train = s.validation_metric === null;
          points.append(svg('circle', {
            class: `pt pt-metric${train ? ' is-train' : ''}${fold}`, cx: x(s.lambda), cy: p.y(v), r: fold ? 2.5 : 4,
            fill: train ? '#ffffff' : color, stroke: color, ...common,
            'data-value': v, 'data-chosen': isChosen ? 'true' : null,
          }, svg('title', {}, `λ = ${fmtLambda(s.lambda)}: ${train ? 'train' : 'held-out'} ${name} ${fmtNum(v)} (${where})`)));
        } else if (p.kind === 'loss') {
          points.append(svg('circle', {
            class: 'pt pt-loss', cx: x(s.lambda), cy: p.y(v), r: 3.5, fill: color, stroke: color,
            ...common, 'data-value': v,
          }, svg('title', {}, `λ = ${fmtLambda(s.lambda)}: surrogate loss ${fmtNum(v)} (${where})`)));
        } else {
          points.append(svg('circle', {
            class: 'pt pt-constraint', cx: x(s.lambda), cy: p.y(v), r: 3.5, fill: color, stroke: color,
            ...common, 'data-value': v, 'data-constraint': p.index,
          }, svg('title', {}, `λ = ${fmtLambda(s.lambda)}: ${p.label}: ${fmtNum(v)} (${where})`)));
        }
      }
    }
    root.append(points);
    root.append(marks);  // above the points: what each repeat chose
    return h('figure', { class: 'plot' }, root);
  }

  // ---------------------------------------------------------------- results

  function drawResults(el, result, word = 'class') {
    const name = result.metric_display_name || result.metric;
    const classes = result.classes || null;
    // An averaged job chose by its average (result.selection); each class chose its own λ.
    const chosenBy = classes
      ? (result.selection ? `${name} ${fmtNum(result.selection.mean)} (${selectionLabel(
        { selection_split: result.selection.split, n_folds: result.selection.n_folds })})` : null)
      : selectionText(result.choices, name);
    const constraints = resultConstraints(result);
    const lambdaText = classes
      ? (result.multiclass === 'multinomial'
        ? ` · ${classes.length} classes, one multinomial logistic regression (no λ)`
        : ` · ${classes.length} ${word === 'label' ? 'labels' : 'classes'}, one λ each`)
      : ` · trained λ = ${fmtLambda(result.trained_lambda)}`;
    const children = [h('div', { class: 'card-head' },
      h('h2', { id: 'results-title' }, 'Results'),
      h('span', { class: 'muted small', id: 'results-summary' },
        `${name}${constraints.length ? ` under ${constraints.map((c) => c.display_name).join(', ')}` : ''}`
        + `, ${result.greater_is_better ? 'higher' : 'lower'} is better${lambdaText}`
        + (result.shift ? ` (shift ${result.shift})` : '') + (chosenBy ? ` · METRO chose by ${chosenBy}` : '')))];
    if (!result.summary.length) {
      children.push(h('p', { class: 'muted' }, 'This job recorded no metric values.'));
      fill(el, ...children);
      return;
    }
    const constraintsPart = constraints.length ? [h('h3', {}, 'Constraints'), constraintsTable(result),
      // An averaged job's value is the mean over its classes: it can clear a bound one of them
      // missed, whose own value is in the per-class table.
      classes ? h('p', { class: 'muted small', id: 'constraints-averaged' },
        `Each value is the mean of the per-${word} values; all hold: every ${word}'s held (each ${word}'s own in the table below).`) : null] : null;
    // An averaged job runs four methods, a column each: its constraints take the page's width
    // (in half of it the table ran 339 px past its card).
    children.push(h('div', { class: 'results-grid' },
      h('div', {}, h('h3', {}, 'Methods'), methodsTable(result), classes ? null : constraintsPart),
      h('div', {}, h('h3', {}, 'Confusion matrix'), confusionBlock(result, word))));
    if (classes && constraintsPart) children.push(...constraintsPart.filter(Boolean));
    // How the delivered model decides, in the server's words (`metro result` prints them).
    for (const notice of result.notices || []) {
      children.push(h('div', { class: 'notice notice-warning', 'data-code': notice.code, role: 'note' },
        notice.message));
    }
    if (classes) {
      children.push(h('h3', {}, `Per ${word}`), classesTable(result, word));
    }
    fill(el, ...children);
  }

  // An averaged job: a row per class (or label): the λ its search trained at, the offset
  // added to its margin before the argmax, its own metric where it chose, and on test its
  // own metric per method and METRO's one-vs-rest counts (the class's confusion summary).
  function classesTable(result, word = 'class') {
    const methods = [...new Set(result.classes.flatMap((c) => c.summary.filter((s) => s.split === 'test').map((s) => s.method)))];
    const metroTest = (index) => result.runs.find((r) => r.method === 'metro' && r.split === 'test'
      && r.repeat === 0 && r.class_index === index);
    const metric = (result.metric_display_name || result.metric).split(' (')[0];
    const constraints = resultConstraints(result);
    return h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'classes-table' },
      h('caption', { class: 'sr-only' }, `${metric} of each ${word}, and what each ${word}'s search chose`),
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, capital(word)),
        h('th', { scope: 'col', class: 'num' }, h('span', { class: 'nt' }, 'λ')),
        h('th', { scope: 'col', class: 'num', title: 'Added to the class\'s margin before the argmax' }, 'Offset'),
        h('th', { scope: 'col', class: 'num', title: `The ${word}'s ${metric} where its search chose` }, 'Chosen by'),
        methods.map((m) => h('th', { scope: 'col', class: 'num' }, `${methodLabel(m)} (test)`)),
        constraints.map((k) => h('th', { scope: 'col', class: 'num', title: `METRO on test, the mean over the repeats: this ${word}'s own value` }, `${k.display_name} (test)`)),
        constraints.length ? h('th', { scope: 'col', class: 'num', title: `Whether this ${word}'s constraints held on test (in how many repeats)` }, 'Held (test)') : null,
        h('th', { scope: 'col', class: 'num', title: `METRO on test, repeat 0: this ${word} against the rest` }, 'TP · FP · FN'))),
      h('tbody', {}, result.classes.map((c) => {
        const tests = Object.fromEntries(c.summary.filter((s) => s.split === 'test').map((s) => [s.method, s.mean]));
        const run = metroTest(c.class_index);
        // Under constraints, the class's own values: the average's can clear a bound it missed.
        const own = c.summary.find((s) => s.split === 'test' && s.method === 'metro');
        const held = own && own.constraints_held !== null && own.constraints_held !== undefined
          ? holdsEl(own.constraints_held === own.n, own.n === 1 ? (own.constraints_held ? 'yes' : 'no') : `${own.constraints_held} of ${own.n}`)
          : '—';
        return h('tr', { 'data-class': String(c.label) },
          h('th', { scope: 'row' }, String(c.label),
            c.warnings.length ? h('span', { class: 'tag', title: c.warnings.join(', ') }, 'warning') : null),
          h('td', { class: 'num' }, fmtLambda(c.trained_lambda)),
          h('td', { class: 'num' }, c.offset === null || c.offset === undefined ? '—' : fmtNum(c.offset, 3)),
          h('td', { class: 'num' }, fmtNum(c.selection_score)),
          methods.map((m) => h('td', { class: 'num' }, fmtNum(tests[m]))),
          constraints.map((k, i) => h('td', { class: 'num', 'data-constraint': i }, fmtNum(own && own.constraint_means ? own.constraint_means[i] : null))),
          constraints.length ? h('td', { class: 'num', 'data-held': '' }, held) : null,
          h('td', { class: 'num' }, run ? `${fmtCount(run.confusion.tp)} · ${fmtCount(run.confusion.fp)} · ${fmtCount(run.confusion.fn)}` : '—'));
      }))));
  }

  // Under constraints: each one's value per method and split (the mean over the repeats), and
  // whether they all hold (in how many repeats, when there are several); every method chose
  // under them.
  function constraintsTable(result) {
    const constraints = resultConstraints(result);
    const methods = [...new Set(result.summary.map((s) => s.method))];
    const splits = ['validation', 'test'].filter((sp) => result.summary.some((s) => s.split === sp));
    const cellOf = (method, split) => result.summary.find((s) => s.method === method && s.split === split);
    const n = Math.max(0, ...result.summary.map((s) => s.n));
    const rows = [];
    constraints.forEach((c, i) => {
      for (const split of splits) {
        rows.push(h('tr', { 'data-constraint': i, 'data-split': split },
          h('th', { scope: 'row' }, c.display_name), h('td', {}, splitName(result, split)),
          methods.map((m) => {
            const cell = cellOf(m, split);
            const means = cell && cell.constraint_means;
            return h('td', { class: 'num', 'data-method': m }, fmtNum(means ? means[i] : null));
          })));
      }
    });
    for (const split of splits) {
      rows.push(h('tr', { class: 'all-hold', 'data-split': split },
        h('th', { scope: 'row' }, 'All hold'), h('td', {}, splitName(result, split)),
        methods.map((m) => {
          const cell = cellOf(m, split);
          if (!cell || cell.constraints_held === null || cell.constraints_held === undefined) {
            return h('td', { class: 'num', 'data-method': m }, '—');
          }
          const all = cell.constraints_held === cell.n;
          return h('td', { class: 'num', 'data-method': m },
            holdsEl(all, cell.n === 1 ? (all ? 'yes' : 'no') : `${cell.constraints_held} of ${cell.n}`));
        })));
    }
    return h('div', { class: 'table-wrap' }, h('table', { class: 'table compact', id: 'constraints-table' },
      h('caption', { class: 'sr-only' }, `Each constraint's value per method and split${n > 1 ? `, mean over ${n} repeats` : ''}`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Constraint'), h('th', { scope: 'col' }, 'Split'),
        methods.map((m) => h('th', { scope: 'col', class: 'num' }, methodLabel(m))))),
      h('tbody', {}, rows)));
  }

  // A split as the tables name it: a binary job's refit trained every model on its validation
  // rows (result.validation_in_sample), so that row is in-sample, as `metro result` says too.
  const IN_SAMPLE_TITLE = 'In-sample: the refit trained each model on these rows too; the held-out '
    + 'score METRO chose by is the selection, and test was never seen';
  function splitName(result, split) {
    return split === 'validation' && result.validation_in_sample ? 'validation (in-sample)' : split;
  }

  function methodsTable(result) {
    const methods = [];
    const byMethod = new Map();
    for (const row of result.summary) {
      if (!byMethod.has(row.method)) {
        byMethod.set(row.method, {});
        methods.push(row.method);
      }
      byMethod.get(row.method)[row.split] = row;
    }
    // Under constraints "best" is the best test mean among the methods whose constraints held
    // on test in every repeat: a better objective that breaks the floor is not the better model.
    const constrained = (result.constraints || []).length > 0;
    const eligible = (m) => {
      const test = byMethod.get(m).test;
      return Boolean(test) && (!constrained || test.constraints_held === test.n);
    };
    const testMeans = methods.filter(eligible).map((m) => byMethod.get(m).test.mean)
      .filter((v) => v !== undefined && v !== null);
    // Among several methods only, and said as what it is: "Best" elsewhere on the page (and in
    // `metro result`) is the score the search chose by, on held-out rows; a lone METRO row
    // tagged "best" read as that.
    const best = testMeans.length && methods.length > 1
      ? (result.greater_is_better ? Math.max(...testMeans) : Math.min(...testMeans)) : null;
    const bestTitle = constrained
      ? 'Best test mean among the methods whose constraints held on test in every repeat'
      : 'Best test mean';
    // Each repeat's λ (a model was trained at each), never their mean (no model was).
    const repeats = Math.max(0, ...result.summary.map((s) => s.n));
    const lambdaCell = (method) => {
      const runs = result.runs.filter((r) => r.method === method && r.split === 'test' && r.lambda !== null
        && (r.class_index === null || r.class_index === undefined))
        .sort((a, b) => a.repeat - b.repeat);
      if (!runs.length) return h('td', { class: 'num lambdas' }, '—');
      const shown = 5;
      const text = runs.slice(0, shown).map((r) => fmtLambda(r.lambda)).join(', ')
        + (runs.length > shown ? ', …' : '');
      const title = runs.map((r) => `repeat ${r.repeat}${r.repeat === 0 ? ' (the model delivered)' : ''}: λ = ${fmtLambda(r.lambda)}`).join('; ');
      return h('td', { class: 'num lambdas', title, 'data-lambdas': JSON.stringify(runs.map((r) => r.lambda)) }, text);
    };
    const cell = (row, key) => h('td', { class: 'num' }, row ? fmtNum(row[key]) : '—');
    return h('div', { class: 'table-wrap' }, h('table', { class: 'table', id: 'methods-table' },
      h('caption', { class: 'sr-only' }, `${result.metric_display_name || result.metric}: mean and standard deviation over repeats, per method and split`),
      h('thead', {},
        h('tr', {},
          h('th', { scope: 'col', rowspan: 2 }, 'Method'),
          h('th', { scope: 'colgroup', colspan: 2, class: 'group', id: 'methods-validation',
            title: result.validation_in_sample ? IN_SAMPLE_TITLE : null },
          // On a line of its own: the table fits its half-wide card at 1280 px.
          'Validation', result.validation_in_sample
            ? [h('br'), h('span', { class: 'small', id: 'methods-in-sample' }, '(in-sample)')] : null),
          h('th', { scope: 'colgroup', colspan: 2, class: 'group' }, 'Test'),
          h('th', { scope: 'col', rowspan: 2, class: 'num', id: 'methods-lambda',
            title: repeats > 1 ? 'The λ each repeat trained its model at, repeat 0 first' : 'The λ the model was trained at' },
          h('span', { class: 'nt' }, 'λ'), repeats > 1 ? ' per repeat' : ''),
          h('th', { scope: 'col', rowspan: 2, class: 'num' }, 'Repeats')),
        h('tr', {}, ['mean', 'std', 'mean', 'std'].map((t) => h('th', { scope: 'col', class: 'num' }, t)))),
      h('tbody', {}, methods.map((method) => {
        const rows = byMethod.get(method);
        const isBest = eligible(method) && best !== null && rows.test.mean === best;
        return h('tr', { 'data-method': method, class: isBest ? 'is-best' : null },
          h('th', { scope: 'row' }, methodLabel(method),
            isBest ? h('span', { class: 'tag', title: bestTitle }, 'best on test') : null),
          cell(rows.validation, 'mean'), cell(rows.validation, 'std'),
          cell(rows.test, 'mean'), cell(rows.test, 'std'),
          lambdaCell(method),
          h('td', { class: 'num' }, String((rows.test || rows.validation).n)));
      }))));
  }

  function confusionBlock(result, word = 'class') {
    const methods = [...new Set(result.runs.map((r) => r.method))];
    const order = result.summary.map((s) => s.method);
    methods.sort((a, b) => order.indexOf(a) - order.indexOf(b));
    const repeats = [...new Set(result.runs.map((r) => r.repeat))].sort((a, b) => a - b);
    const splits = ['test', 'validation'].filter((s) => result.runs.some((r) => r.split === s));
    const select = (id, label, options, value) => {
      const el = h('select', { id }, options.map(([v, t]) => h('option', { value: v }, t)));
      el.value = String(value);
      return [h('label', { for: id }, label), el];
    };
    const [methodLabelEl, methodSel] = select('cm-method', 'Method', methods.map((m) => [m, methodLabel(m)]),
      methods.includes('metro') ? 'metro' : methods[0]);
    const [splitLabelEl, splitSel] = select('cm-split', 'Split', splits.map((s) => [s, splitName(result, s)]), splits[0]);
    const [repeatLabelEl, repeatSel] = select('cm-repeat', 'Repeat', repeats.map((r) => [r, `repeat ${r}`]), repeats[0]);
    const host = h('div', {});
    const controls = h('div', { class: 'toolbar wrap' }, methodLabelEl, methodSel, splitLabelEl, splitSel,
      repeats.length > 1 ? [repeatLabelEl, repeatSel] : null);

    // A method offers the splits it was scored on: the baselines of an averaged job have test
    // only ("No value for this choice" under validation).
    function offerSplits() {
      const own = splits.filter((sp) => result.runs.some((r) => r.method === methodSel.value && r.split === sp));
      const current = own.includes(splitSel.value) ? splitSel.value : own[0];
      fill(splitSel, own.map((sp) => h('option', { value: sp }, splitName(result, sp))));
      splitSel.value = current;
    }
    methodSel.addEventListener('change', offerSplits);
    offerSplits();

    function draw() {
      // The job's own figure (an averaged job's: its counts summed over the classes).
      const run = result.runs.find((r) => r.method === methodSel.value && r.split === splitSel.value
        && String(r.repeat) === repeatSel.value && (r.class_index === null || r.class_index === undefined));
      if (!run) {
        fill(host, h('p', { class: 'muted' }, 'No value for this choice.'));
        return;
      }
      const c = run.confusion;
      // A binary job's classes by name (result.labels, from its model): "positive" alone did
      // not say whether F1 counted fraud or the honest rows. Text, never markup (h sets it).
      const named = result.labels && !(result.classes || []).length;
      const side = named
        ? { positive: `positive (${result.labels.positive})`, negative: `negative (${result.labels.negative})` }
        : { positive: 'positive', negative: 'negative' };
      const total = c.tp + c.fp + c.fn + c.tn;
      const pct = (n) => (total ? `${((100 * n) / total).toFixed(1)} %` : '');
      const box = (key, label, n, good) => h('td', { class: `cm-cell ${good ? 'cm-good' : 'cm-bad'}`, 'data-cell': key },
        h('span', { class: 'cm-count' }, fmtCount(n)),
        h('span', { class: 'cm-label' }, `${label} · ${pct(n)}`));
      fill(host,
        h('table', { class: 'confusion', id: 'confusion-matrix', 'data-method': run.method, 'data-split': run.split, 'data-repeat': run.repeat },
          h('caption', { class: 'sr-only' }, `Confusion matrix of ${methodLabel(run.method)}, ${splitName(result, run.split)} split, repeat ${run.repeat}`),
          h('thead', {}, h('tr', {}, h('td', {}),
            h('th', { scope: 'col' }, `Predicted ${side.positive}`), h('th', { scope: 'col' }, `Predicted ${side.negative}`))),
          h('tbody', {},
            h('tr', {}, h('th', { scope: 'row' }, `Actual ${side.positive}`),
              box('tp', 'TP', c.tp, true), box('fn', 'FN', c.fn, false)),
            h('tr', {}, h('th', { scope: 'row' }, `Actual ${side.negative}`),
              box('fp', 'FP', c.fp, false), box('tn', 'TN', c.tn, true)))),
        h('p', { class: 'muted small', id: 'cm-total' }, `${result.metric_display_name || result.metric} = ${fmtNum(run.value)}`,
          run.lambda !== null ? ` at λ = ${fmtLambda(run.lambda)}` : '',
          // An averaged job's counts are each class's one-vs-rest counts summed: a row is
          // counted once per class. It read "90 examples" for a test split of 30 rows.
          (result.classes || []).length
            ? ` · one-vs-rest counts summed over ${result.classes.length} ${word === 'label' ? 'labels' : 'classes'} (${fmtCount(total / result.classes.length)} rows, each counted once per ${word})`
            : ` · ${fmtCount(total)} examples`),
        run.constraint_values ? h('p', { class: 'muted small', id: 'cm-constraints' },
          resultConstraints(result).map((c, i) => `${c.display_name}: ${fmtNum(run.constraint_values[i])}`).join(' · '),
          // The estimate on these rows: a confidence is asked of the choice (above), not here,
          // where "met" beside "(90% confidence)" read as the verdict the choice had not won.
          ' · ', holdsEl(Boolean(run.constraints_hold),
            run.constraints_hold ? 'held on these rows' : 'missed on these rows')) : null);
    }
    for (const sel of [methodSel, splitSel, repeatSel]) sel.addEventListener('change', draw);
    draw();
    return h('div', {}, controls, host);
  }

  // ---------------------------------------------------------------- model

  // A label as `metro result` prints it (Python's repr): text quoted, numbers and booleans bare.
  function labelText(value) {
    if (typeof value === 'string') return `'${value}'`;
    if (typeof value === 'boolean') return value ? 'True' : 'False';
    return String(value);
  }

  function drawModel(el, model, job) {
    const children = [h('h2', { id: 'model-title' }, 'Model')];
    if (!model) {
      const ended = { failed: 'The job failed: it delivered no model.',
        cancelled: 'The job was cancelled: it delivered no model.' };
      children.push(h('p', { class: 'muted' }, job.state === 'succeeded'
        ? 'No model was registered for this job.'
        : ended[job.state] || 'The trained model can be downloaded here once the job has succeeded.'));
      fill(el, ...children);
      return;
    }
    const manifest = model.manifest || {};
    const arch = manifest.architecture || {};
    const downloads = h('div', { class: 'toolbar wrap downloads' });
    for (const format of model.formats) {
      const href = `${ROOT}/v1/models/${model.id}/download?format=${encodeURIComponent(format)}`;
      const link = h('a', {
        class: 'button primary download', href, 'data-format': format,
        download: `model-${model.id}.${format}`,
      }, `Download ${format === 'onnx' ? 'ONNX' : 'safetensors'}`);
      // The download needs the Bearer key, which a plain link cannot send: fetch it, then save.
      link.addEventListener('click', (event) => {
        event.preventDefault();
        guard(async () => {
          link.setAttribute('aria-busy', 'true');
          try {
            const response = await apiFetch(`/v1/models/${model.id}/download?format=${encodeURIComponent(format)}`);
            const disposition = response.headers.get('Content-Disposition') || '';
            const match = /filename="([^"]+)"/.exec(disposition);
            const url = URL.createObjectURL(await response.blob());
            const a = h('a', { href: url, download: match ? match[1] : link.getAttribute('download') });
            document.body.append(a);
            a.click();
            a.remove();
            setTimeout(() => URL.revokeObjectURL(url), 10000);
          } finally {
            link.removeAttribute('aria-busy');
          }
        });
      });
      downloads.append(link);
    }
    children.push(dl([
      ['Model ID', h('code', { id: 'model-id' }, model.id)],
      ['Architecture', arch.kind ? `${arch.kind}${arch.hidden && arch.kind === 'mlp' ? ` (hidden ${arch.hidden.join('×')})` : ''}` : '—'],
      ['Features', manifest.n_features !== undefined ? String(manifest.n_features) : '—'],
      // A binary model's positive label, as `metro result` and `metro watch` say it: F1 of one
      // class and F1 of the other are different numbers (an averaged model's classes name
      // themselves).
      manifest.labels && manifest.labels.positive !== undefined
        && ['Positive label', h('span', { id: 'model-positive' },
          `${labelText(manifest.labels.positive)} (negative ${labelText(manifest.labels.negative)}): `
          + `${metricName(job.spec)}${(job.spec && job.spec.constraints && job.spec.constraints.length) ? ' and the constraints count' : ' counts'} `
          + `${labelText(manifest.labels.positive)} as positive`)],
      // An averaged model has a λ per class (or label): the results list them.
      // A multinomial model (manifest.multiclass) was trained at no λ at all.
      manifest.multiclass === 'multinomial'
        ? ['Trained λ', h('span', { id: 'model-lambda' }, 'none (a multinomial logistic regression with tuned offsets)')]
        : manifest.class_lambdas
        ? ['Trained λ', h('span', { id: 'model-lambda' }, `one per ${targetWord(job)} (see Results)`)]
        : ['Trained λ', `${fmtLambda(manifest.trained_lambda !== undefined ? manifest.trained_lambda : manifest.lambda_star)}${manifest.shift ? ` (shift ${manifest.shift})` : ''}`],
      manifest.ratio_reached !== undefined && manifest.ratio_reached !== null
        && ['Ratio reached', fmtLambda(manifest.ratio_reached)],
      // The same digests `metro download` prints, each labelled with its file.
      ['SHA-256 (safetensors)', h('code', { class: 'hash', id: 'sha256-safetensors', title: model.sha256 }, model.sha256)],
      manifest.onnx_sha256 && ['SHA-256 (ONNX)', h('code', { class: 'hash', id: 'sha256-onnx', title: manifest.onnx_sha256 }, manifest.onnx_sha256)],
      ['Created', timeEl(model.created_at)],
    ]), downloads);
    fill(el, ...children);
  }

  // ---------------------------------------------------------------- start

  function start() {
    login.hidden = true;
    if (!apiKey()) {
      showLogin('');
      return;
    }
    signOut.hidden = false;
    const path = location.pathname.slice(ROOT.length);
    const match = /^\/dashboard\/jobs\/([^/]+)\/?$/.exec(path);  // jobPage checks the id
    guard(() => (match ? jobPage(match[1].toLowerCase()) : listPage()));
  }

  // Anything the Content-Security-Policy blocks is counted where a test (or a person in the
  // inspector) can see it: the page must need no inline style or script.
  document.addEventListener('securitypolicyviolation', (event) => {
    const body = document.body.dataset;
    body.cspViolations = String(Number(body.cspViolations || 0) + 1);
    body.cspLast = `${event.violatedDirective}: ${event.blockedURI || 'inline'}`;
  });

  captureKeyFromFragment();
  start();
}());
